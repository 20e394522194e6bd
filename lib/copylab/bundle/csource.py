"""The course's C files, generated from native/: one self-contained source per program.

A program of native/ is several modules linked together (native/Makefile says which). The course
wants one file per program, so each is an amalgamation: the modules' headers (each once, a header
before the headers and sources that include it), then the module sources, then the program's own
file, with the project's `#include "..."` lines dropped and every section headed by the native/
file it came from. System includes stay where they were (a second inclusion is a no-op), so no
header is moved ahead of a definition it depended on.

Concatenation merges what separate compilation kept apart, so two things are done per section:
- macros a .c file defines are #undef'd at its end, as they would end with its compilation unit;
- a file-scope name a .c file keeps to itself (static function or variable, struct/union/enum
  tag, typedef, enumerator) that another module also uses is renamed for that section only
  (`#define name module_name` after its includes, `#undef name` at its end), so native/ stays
  untouched. `renamed` in the result lists what was renamed; the compile check catches the rest.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import registry
from ..errors import CopylabError
from ..paths import NATIVE_DIR

# flags of native/Makefile that only serve its object-file build (dependency files)
_BUILD_ONLY_FLAGS = ("-MMD", "-MP")
_PROJECT_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*(?:/[*/].*)?$')
_ANY_INCLUDE = re.compile(r"^\s*#\s*include\b")
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)", re.M)
_MAKE_VAR = re.compile(r"^([A-Z_]+)\s*:?=\s*(.*?)\s*$")
_COMMENTS_AND_LITERALS = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_ATTRIBUTE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_C_WORDS = {"static", "const", "volatile", "inline", "extern", "unsigned", "signed", "struct", "union",
            "enum", "typedef", "void", "char", "short", "int", "long", "float", "double", "_Atomic",
            "_Thread_local", "restrict", "register"}


@dataclass(frozen=True)
class NativeBuild:
    """What native/Makefile builds: the programs, their modules and the compiler flags."""

    programs: tuple[str, ...]
    common: tuple[str, ...]
    server: tuple[str, ...]
    cflags: tuple[str, ...]
    ldlibs: tuple[str, ...]
    client: tuple[str, ...] = ()  # the client's own modules beside client.c

    def sources(self, program: str) -> tuple[str, ...]:
        """The .c files native/Makefile links into program, the program's own file last."""
        own = f"{program}.c"
        if program.endswith("_server"):
            return self.common + self.server + (own,)
        return self.common + self.client + (own,)


@dataclass
class Amalgamation:
    program: str
    text: str
    renamed: dict[str, list[str]] = field(default_factory=dict)  # native file -> names renamed in it


def read_native_build(native_dir: Path = NATIVE_DIR) -> NativeBuild:
    """Programs, modules and flags from native/Makefile, so the bundle builds what it builds."""
    makefile = native_dir / "Makefile"
    try:
        text = makefile.read_text()
    except OSError as exc:
        raise CopylabError(f"{makefile}: cannot read it ({exc.strerror or exc})") from exc
    values = {}
    for line in text.splitlines():
        match = _MAKE_VAR.match(line)
        if match:
            values[match.group(1)] = match.group(2).split()
    missing = [k for k in ("COMMON", "SERVER", "CFLAGS_BASE", "OPT") if k not in values]
    if missing:
        raise CopylabError(f"{makefile}: no {', '.join(missing)} variable(s): cannot tell what to bundle")
    cflags = [f for f in values["CFLAGS_BASE"] if f not in _BUILD_ONLY_FLAGS] + values["OPT"]
    # the course's programs: the study's three senders (by role, from the registry) and the client
    programs = tuple(f"{impl}_server" for impl in registry.study_impls()) + ("client",)
    return NativeBuild(programs, tuple(values["COMMON"]), tuple(values["SERVER"]), tuple(cflags),
                       tuple(values.get("LDLIBS", [])), tuple(values.get("CLIENT", [])))


def amalgamate(program: str, build: NativeBuild, native_dir: Path = NATIVE_DIR) -> Amalgamation:
    """One self-contained C file for program (see the module docstring)."""
    sources = build.sources(program)
    texts = {name: _read(native_dir, name) for name in sources}
    headers: list[str] = []
    for name in sources:
        _collect_headers(name, texts, native_dir, headers, stack=())
    declared = {name: file_scope_names(texts[name], all_names=True) for name in headers + list(sources)}
    renamed: dict[str, list[str]] = {}
    for name in sources:
        elsewhere = set().union(*(declared[other] for other in declared if other != name))
        clash = sorted(file_local_names(texts[name]) & elsewhere)
        if clash:
            renamed[name] = clash
    shared_macros = set().union(*(_DEFINE.findall(texts[name]) for name in headers))
    parts = [_banner(program, sources, headers, build, renamed)]
    parts += [_section(name, texts[name], native_dir=native_dir) for name in headers]
    for name in sources:
        # a .c file's own macros end with it (not the program's file: nothing follows it)
        own = [] if name == sources[-1] else [m for m in dict.fromkeys(_DEFINE.findall(texts[name]))
                                               if m not in shared_macros]
        parts.append(_section(name, texts[name], renames=renamed.get(name, []), own_macros=own,
                              native_dir=native_dir))
    return Amalgamation(program, "\n".join(parts), renamed)


def _read(native_dir: Path, name: str) -> str:
    path = native_dir / name
    try:
        return path.read_text()
    except OSError as exc:
        raise CopylabError(f"{path}: cannot read it ({exc.strerror or exc}); native/Makefile names it") from exc


def _collect_headers(name: str, texts: dict, native_dir: Path, out: list[str], stack: tuple) -> None:
    """Depth first: a header's own project headers come before it (a .def table is no header: it is
    written in where it is included, see _section)."""
    for line in texts[name].splitlines():
        match = _PROJECT_INCLUDE.match(line)
        if not match or match.group(1).endswith(".def"):
            continue
        header = match.group(1)
        if header in stack:
            raise CopylabError(f"native/{header}: includes itself through {' -> '.join(stack)}")
        if header not in texts:
            texts[header] = _read(native_dir, header)
        if header not in out:
            _collect_headers(header, texts, native_dir, out, stack + (name,))
            if header not in out:
                out.append(header)


def _banner(program: str, sources, headers, build: NativeBuild, renamed: dict) -> str:
    lines = [f"/* {program}: generated by `copylab bundle` from the project's native/ sources; edit those,",
             " * not this file. One file for the course: the headers and modules native/Makefile links",
             f" * into {program}, concatenated with the project's own #include lines removed.",
             f" *   headers: {', '.join(headers)}",
             f" *   sources: {', '.join(sources)}",
             f" * Build: cc {' '.join(build.cflags)} THIS_FILE.c -o {program} {' '.join(build.ldlibs)}".rstrip()]
    for name, names in renamed.items():
        lines.append(f" * Renamed in the native/{name} section (file-local there, used by another module "
                     f"too): {', '.join(names)}")
    return "\n".join(lines) + "\n */\n"


def _inline_tables(text: str, native_dir: Path) -> str:
    """An X-macro table (#include "registry.def") written in at each place it is included: the
    including code defines the macros it expands to just before."""
    out = []
    for line in text.splitlines():
        match = _PROJECT_INCLUDE.match(line)
        if match and match.group(1).endswith(".def"):
            out.append(f"/* native/{match.group(1)}, written in here */")
            out.extend(_read(native_dir, match.group(1)).rstrip("\n").splitlines())
        else:
            out.append(line)
    return "\n".join(out)


def _section(name: str, text: str, renames=(), own_macros=(), native_dir: Path = NATIVE_DIR) -> str:
    text = _inline_tables(text, native_dir)
    lines = [line for line in text.rstrip("\n").splitlines() if not _PROJECT_INCLUDE.match(line)]
    stem = Path(name).stem
    if renames:
        # after the section's includes, so no system header sees the new names
        last_include = max((i for i, line in enumerate(lines) if _ANY_INCLUDE.match(line)), default=-1)
        defines = [f"/* file-local names of native/{name} that another module uses too */"]
        defines += [f"#define {n} {stem}_{n}" for n in renames]
        lines[last_include + 1:last_include + 1] = defines
    tail = []
    undo = list(renames) + [m for m in own_macros if m not in renames]
    if undo:
        tail = [f"/* native/{name} ends: its own macros and renames end with it */"]
        tail += [f"#undef {n}" for n in undo]
    rule = "=" * max(4, 76 - len(name))
    return "\n".join([f"/* ==== native/{name} {rule} */", *lines, *tail, ""])


# ---------------------------------------------------------------------------------------------
# file-scope names, from a light reading of C (the code style of native/: declarations at column 0)

def _top_level_chunks(text: str):
    """Declarations and definitions at file scope: (text with bodies emptied, enum bodies kept)."""
    code = _COMMENTS_AND_LITERALS.sub(" ", text.replace("\\\n", " "))  # macros continue over lines
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
    code = _ATTRIBUTE.sub(" ", code)
    chunk, depth, body = [], 0, []
    for ch in code:
        if ch == "{":
            depth += 1
            if depth == 1:
                body = []
                continue
        elif ch == "}":
            depth -= 1
            if depth == 0:
                head = "".join(chunk)
                keep = "".join(body) if re.search(r"\benum\b[^=;(]*$", head) else ""
                chunk.append("{" + keep + "}")
                if re.search(r"\)\s*$", head):  # a function body ends the chunk
                    yield "".join(chunk)
                    chunk = []
                continue
        if depth == 0:
            if ch == ";":
                yield "".join(chunk)
                chunk = []
            else:
                chunk.append(ch)
        else:
            body.append(ch)
    if "".join(chunk).strip():
        yield "".join(chunk)


def _declared(chunk: str) -> tuple[bool, set[str]]:
    """(is it static, the names a top-level chunk declares)."""
    names: set[str] = set()
    words = chunk.split()
    if not words:
        return False, names
    for kind, tag, body in re.findall(r"\b(struct|union|enum)\s+(\w+)?\s*\{([^{}]*)\}", chunk):
        if tag:
            names.add(tag)
        if kind == "enum":
            names.update(m.group(1) for m in re.finditer(r"(?:^|,)\s*([A-Za-z_]\w*)", body))
    declarators = re.sub(r"\{[^{}]*\}", " ", chunk)
    if re.fullmatch(r"\s*(struct|union|enum)\s+\w*\s*", declarators):
        return words[0] == "static", names  # a type definition only
    paren = declarators.find("(")
    equals = declarators.find("=")
    if paren != -1 and (equals == -1 or paren < equals):  # a function, or a function pointer
        pointer = re.match(r"[^(]*\(\s*\*\s*([A-Za-z_]\w*)\s*\)", declarators)
        before = declarators[:paren]
        idents = [w for w in _IDENT.findall(before) if w not in _C_WORDS]
        name = pointer.group(1) if pointer else (idents[-1] if idents else None)
        if name:
            names.add(name)
    else:
        for part in _split_top(declarators, ","):
            head = re.split(r"[=\[]", part, maxsplit=1)[0]
            idents = [w for w in _IDENT.findall(head) if w not in _C_WORDS]
            if idents:
                names.add(idents[-1])
    return words[0] == "static", names


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def file_scope_names(text: str, all_names: bool) -> set[str]:
    """Names declared at file scope: all of them, or only the static ones and the types."""
    names = set()
    for chunk in _top_level_chunks(text):
        is_static, declared = _declared(chunk)
        # a type of its own: a typedef, or a struct/union/enum defined or declared (not a function
        # or variable whose type merely starts with "struct")
        is_type = bool(re.match(r"\s*typedef\b", chunk)
                       or re.match(r"\s*(struct|union|enum)\s*\w*\s*(\{|;)", chunk))
        if all_names or is_static or is_type:
            names |= declared
    if all_names:
        names |= set(_DEFINE.findall(text))
    return names


def file_local_names(text: str) -> set[str]:
    """What a .c file keeps to itself: static functions and variables, its own types and enumerators."""
    return file_scope_names(text, all_names=False)


# ---------------------------------------------------------------------------------------------
# the bundle's Makefile, and a build of it before anything is handed in

def makefile_text(build: NativeBuild, program_sources: dict[str, str], roll: str) -> str:
    """A Makefile that builds every program from its course-named file with native/'s flags."""
    rules = []
    for program, source in program_sources.items():
        rules.append(f"{program}: {source}\n\t$(CC) $(CFLAGS_BASE) $(CFLAGS) $(LDFLAGS) $< -o $@ $(LDLIBS)\n")
    return (f"# {roll} PA02: builds the programs from the course-named sources (generated by copylab from\n"
            "# its native/ modules, with native/Makefile's flags).\n"
            "#   make         build " + " ".join(program_sources) + "\n"
            "#   make clean   remove them\n"
            "CC ?= cc\n"
            f"CFLAGS_BASE := {' '.join(build.cflags)}\n"
            f"LDLIBS := {' '.join(build.ldlibs)}\n"
            f"PROGRAMS := {' '.join(program_sources)}\n\n"
            "all: $(PROGRAMS)\n\n" + "\n".join(rules) +
            "\nclean:\n\trm -f $(PROGRAMS)\n\n.PHONY: all clean\n")


def check_build(folder: Path) -> None:
    """Run make on a copy of folder's sources and Makefile; raise unless it builds without a word
    on stderr (warnings are errors under -Werror, but make's own warnings are not)."""
    if shutil.which("make") is None or shutil.which("cc") is None:
        raise CopylabError("checking the generated C sources needs make and a C compiler "
                           "(apt-get install make gcc)")
    with tempfile.TemporaryDirectory(prefix="copylab-bundle-build-") as scratch:
        for path in folder.iterdir():
            if path.suffix == ".c" or path.name == "Makefile":
                shutil.copy2(path, scratch)
        proc = subprocess.run(["make", "-j2", "-C", scratch], capture_output=True, text=True,
                              # not a sub-make of `make bundle`: its MAKEFLAGS would not fit
                              env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    if proc.returncode != 0 or proc.stderr.strip():
        lines = [ln for ln in proc.stderr.splitlines() if "error" in ln or "warning" in ln] or \
            proc.stderr.splitlines() or [f"make exited with status {proc.returncode}"]
        raise CopylabError(f"the generated C sources do not build cleanly: {lines[0].strip()}")
