"""copylab.userfiles (issue 23): files a user names are regular files of a stated encoding and
size, named for what they are otherwise; files inside a results folder are data, opened only by
their fixed names and never through a link; a path found in a results folder is never opened."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from conftest import run_copylab
from copylab import report_display, userfiles
from copylab.analysis import load_results
from copylab.errors import CopylabError
from copylab.params import load_grid
from data.analysis import synthetic
from faults import HANG_S, TINY, assert_one_line_error, folder_state, returns

SECRET = "COPYLAB-SECRET-7f3a: a file of this machine the report must never show"


@pytest.fixture
def odd_files(tmp_path) -> dict:
    """A declaration in each shape people hand over: Latin-1, binary, huge (sparse), a FIFO, /dev/zero."""
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Déclaration: j'ai utilisé un outil.".encode("latin-1"))
    binary = tmp_path / "binary.bin"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as handle:
        handle.truncate(1 << 30)  # 1 GiB, sparse: reading it whole is what must not happen
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return {"latin-1": (latin1, "not UTF-8 text (byte 0xe9 at offset 1)"),
            "binary": (binary, "a binary file, not text"),
            "1 GiB": (huge, "larger than 64 KiB"),
            "FIFO": (fifo, "is a FIFO (named pipe), not a regular file"),
            "/dev/zero": (Path("/dev/zero"), "is a character device, not a regular file"),
            "a folder": (tmp_path, "is a folder, not a regular file"),
            "missing": (tmp_path / "nope.txt", "no such file")}


@pytest.mark.parametrize("case", ["latin-1", "binary", "1 GiB", "FIFO", "/dev/zero", "a folder", "missing"])
def test_a_declaration_that_is_not_utf8_text_is_one_line_quickly(odd_files, case):
    """Quickly: never blocked (on the FIFO), never read whole (the 1 GiB file, /dev/zero): at most the
    64 KiB + 1 the check needs (beside a few KiB pytest reads meanwhile), whatever the host's load."""
    path, needle = odd_files[case]
    with pytest.raises(CopylabError) as info:
        returns(userfiles.read_declaration, path)
    assert info.value.bytes_read < userfiles.MAX_DECLARATION_BYTES + (256 << 10), "read whole"
    assert str(info.value).startswith(f"--ai-declaration {path}: ") and needle in str(info.value), str(info.value)


def test_a_utf8_declaration_with_a_bom_and_any_script_is_read(tmp_path):
    path = tmp_path / "ok.txt"
    path.write_bytes("\ufeffAI-usage declaration: अदिति 李 דוד 😀\n".encode())
    assert userfiles.read_declaration(path) == "AI-usage declaration: अदिति 李 דוד 😀"


@pytest.mark.slow
@pytest.mark.parametrize("case", ["latin-1", "binary", "1 GiB", "FIFO"])
def test_copylab_report_with_such_a_declaration_writes_nothing(tmp_path, odd_files, case):
    path, needle = odd_files[case]
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    before = folder_state(folder)
    proc = run_copylab("report", str(folder), "--ai-declaration", str(path), timeout=120)
    assert_one_line_error(proc, needle)
    assert folder_state(folder) == before


@pytest.mark.parametrize("case", ["FIFO", "/dev/zero", "latin-1"])
def test_a_grid_naming_such_a_declaration_is_refused_at_load(tmp_path, odd_files, case):
    path, needle = odd_files[case]
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({**TINY, "ai_declaration": str(path)}))
    with pytest.raises(CopylabError, match=f"ai_declaration {path}: .*{needle.split(' (')[0]}"):
        load_grid(grid)


@pytest.mark.parametrize("case", ["FIFO", "/dev/zero"])
def test_a_params_path_that_is_a_fifo_or_a_device_is_named_as_such(tmp_path, odd_files, case):
    path, needle = odd_files[case]
    # reading /dev/zero whole, or blocking on the FIFO, would outlast the timeout (TimeoutExpired fails it)
    proc = run_copylab("sweep", str(path), "--out", str(tmp_path / "out"), timeout=HANG_S)
    assert_one_line_error(proc, f"params file {path}: {needle}")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------
# a results folder is data

def test_a_declaration_path_in_meta_json_is_never_opened(tmp_path):
    """meta.json params.ai_declaration names a file: the report shows no declaration rather than
    that file (it embedded /proc/self/environ before)."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    meta = json.loads((folder / "meta.json").read_text())
    for path in (str(secret), "/proc/self/environ"):
        meta["params"] = {**meta.get("params", {}), "ai_declaration": path}
        (folder / "meta.json").write_text(json.dumps(meta))
        _, loaded = load_results(folder)
        fields = report_display.resolve_author(loaded, folder)
        assert fields["ai_declaration"] == "", fields
        assert SECRET not in report_display.author_markdown(fields)


def test_the_declaration_copied_at_sweep_time_is_read_from_the_folder(tmp_path):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    declaration = tmp_path / "decl.txt"
    declaration.write_text("AI-usage declaration: my own words.\n")
    userfiles.copy_declaration(str(declaration), folder)
    declaration.write_text(SECRET)  # changed after the sweep: the report keeps what the sweep took
    assert (folder / userfiles.DECLARATION_FILE).read_text() == "AI-usage declaration: my own words.\n"
    _, meta = load_results(folder)
    assert report_display.resolve_author(meta, folder)["ai_declaration"] == "AI-usage declaration: my own words."
    # a flag wins over the folder's copy
    assert report_display.resolve_author(meta, folder, ai_declaration="given")["ai_declaration"] == "given"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["results.csv", "meta.json", userfiles.DECLARATION_FILE])
def test_a_link_out_of_the_results_folder_is_not_followed(tmp_path, name):
    secret = tmp_path / "elsewhere.txt"
    secret.write_text(SECRET)
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(secret)
    with pytest.raises(CopylabError, match=f"{name}: is a symbolic link") as info:
        _, meta = load_results(folder)
        report_display.resolve_author(meta, folder)
    assert SECRET not in str(info.value)
    before = folder_state(folder)
    proc = run_copylab("report", str(folder), timeout=120)
    assert_one_line_error(proc, "is a symbolic link")
    assert SECRET not in proc.stderr and folder_state(folder) == before


def test_a_fifo_inside_a_results_folder_does_not_block_the_report(tmp_path):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    (folder / "meta.json").unlink()
    os.mkfifo(folder / "meta.json")
    with pytest.raises(CopylabError, match="meta.json: is a FIFO"):
        returns(load_results, folder)  # blocked on the FIFO, it fails after HANG_S
