"""The bundle's README for the grader, and what the author should know before handing it in."""

from __future__ import annotations

from .. import escape, registry
from ..fmt import system_summary
from ..report_display import placeholder_line, placeholders
from ..sweep.folder import check_state
from .plots import PLOTS

PART_OF = {"A1": "A1 server: serialises the 8 fields into one buffer, then send() (two copies)",
           "A2": "A2 server: one sendmsg() over an iovec of the 8 fields (one copy)",
           "A3": "A3 server: sendmsg(MSG_ZEROCOPY), completions read from the error queue"}


def _sources_note(record: dict) -> str:
    measured, now = record["results"]["git_revision"], record["sources"]["git_revision"]
    if measured and now and measured == now and not now.endswith("-dirty"):
        return f"from the same revision that measured the results ({now})"
    return (f"from native/ as it was when the bundle was made (revision {now or 'unknown'}); the "
            f"results were measured with revision {measured or 'unknown'}")


def _file_rows(roll: str, programs: dict) -> list[tuple[str, str]]:
    """(file, what it is) for every file of the bundle."""
    rows = []
    for program, files in programs.items():
        for name in files:
            part = name[len(roll) + len("_Part_"):].split("_")[0]
            what = (PART_OF.get(part, program) if program.endswith("_server") else
                    "the client (receiver; one program drives all three servers, so the client files "
                    "are identical)" if program == "client" else program)
            rows.append((name, f"{what}; `make` builds `{program}`"))
    rows += [("Makefile", f"builds {', '.join(f'`{p}`' for p in programs)} from the files above, "
                          "warning-free under -Wall -Wextra -Werror"),
             (f"{roll}_Part_C_run_all.sh", "Part C: builds, creates the two network namespaces, runs every "
                                           "point of the grid under perf stat on both ends, writes "
                                           "results/results.csv and each point's raw output")]
    rows += [(f"{roll}_Part_D_{spec.name}.py", f"Part D: {spec.title}; writes "
                                               f"{roll}_Part_D_{spec.name}.png") for spec in PLOTS]
    rows += [(f"{roll}_results.csv", "the measured results the report and the plots use, one row per point"),
             (f"{roll}_Report.pdf", "the report"),
             ("bundle.json", "where everything came from, machine-readable, with the sha256 of every file")]
    return rows


def _provenance(inputs, record: dict) -> str:
    """Where the numbers come from: the sweep, the host, the counters, the sources, the bundle."""
    roll, origin = inputs.roll, record["results"]
    md, code = escape.markdown, escape.markdown_code
    return f"""- Results: sweep {code(origin['sweep'])} ({code(origin['results_dir'])}), measured {code(origin['started_at'])} to {code(origin['finished_at'])} (status {md(origin['sweep_status'] or 'unknown')}): {md(origin['points'])} points measured, {md(origin['failed_points'])} failed and left out; code revision {code(origin['git_revision'] or 'unknown')}.
- Host: {md(system_summary(inputs.meta))}.
- Counters: {md(origin['perf_note']) if origin['perf_note'] else 'every requested perf event was counted.'}
- The plots and `{roll}_results.csv` come from the same results folder as `{roll}_Report.pdf`.
- C sources: single-file builds of the project's native/ modules (each section names the file it came from), {md(_sources_note(record))}.
- Bundle made by copylab {record['copylab_version']} at {record['created_at']}."""


def readme_text(inputs, record: dict) -> str:
    roll, fields, programs = inputs.roll, inputs.fields, record["sources"]["programs"]
    table = "\n".join(f"| `{name}` | {what} |" for name, what in _file_rows(roll, programs))
    plots = "\n".join(f"python3 {roll}_Part_D_{spec.name}.py" for spec in PLOTS)
    server = next((p for p in programs if p.endswith("_server")), f"{registry.baseline()}_server")
    md, code = escape.markdown, escape.markdown_code  # every value from the flags, the grid or the results folder
    decl = md(fields["ai_declaration"], block=True) if fields["ai_declaration"] else "_not given_"
    return f"""# {md(roll)}: PA02, the cost of data movement in Linux TCP I/O

- **Author:** {md(fields['author']) if fields['author'] else '_not given_'}
- **Roll number:** {md(roll)}
- **Repository:** {code(fields['repo_url']) if fields['repo_url'] else '_not given_'}

## Files

| file | what it is |
| --- | --- |
{table}

## Build

```sh
make
```

## Run

The whole sweep (root: the server and the client run in two network namespaces joined by veth):

```sh
sudo ./{roll}_Part_C_run_all.sh
sudo env MSG_SIZES=4096 THREADS=1 DURATION_S=0.2 ./{roll}_Part_C_run_all.sh   # a smaller grid
```

The grid at the top of the script is the one the submitted results were measured on; every
variable there can be overridden from the environment. One point by hand, on loopback:

```sh
./{server} --bind 127.0.0.1 --port 5201 --msg-size 4096 --mode throughput --json &
./client --connect 127.0.0.1 --port 5201 --msg-size 4096 --mode throughput --threads 1 --duration 2 --warmup 0.5 --json
kill -INT %1
```

## Plots

Each script holds its values as Python lists (no file is read; matplotlib is the only dependency)
and writes the PNG of the same name beside itself:

```sh
{plots}
```

## Where the numbers come from

{_provenance(inputs, record)}

## AI-usage declaration

{decl}
"""


def warnings(inputs, record: dict) -> list[str]:
    """What the author should fix before handing in; the bundle is written anyway."""
    fields, out = inputs.fields, []
    line = placeholder_line(placeholders(fields), "--roll")  # only a --draft bundle gets here with any
    if line:
        out.append(f"a draft: {line}")
    if record["results"]["sweep_status"] not in (None, "finished"):  # in the words report and compare use
        out.append(check_state(inputs.results_dir, inputs.meta, len(inputs.df), escape.quoted_path(inputs.results_dir))
                   or f"the sweep's status is {record['results']['sweep_status']!r}, not finished")
    if not _sources_note(record).startswith("from the same revision"):
        out.append("the C sources are " + _sources_note(record))
    return out
