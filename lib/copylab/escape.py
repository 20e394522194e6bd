"""One escaping function per target language: every value copylab did not write itself (a flag, a
grid key, a declaration, anything read from a results folder) passes through the function of the
text it lands in, or travels as data (a JSON literal that is parsed, never pasted as code).

| target | function | what it guarantees |
| --- | --- | --- |
| Markdown (report cells, the bundle's README) | `markdown` | every ASCII punctuation character backslash-escaped: no emphasis, link, image, raw HTML, raw TeX, math, table cell or heading can start; pandoc (PDF) and mistune (HTML) show the text as typed |
| Markdown prose copylab wrote around such values | `markdown_prose` | the same outside code spans; `*` (emphasis) and code spans kept |
| Markdown code | `markdown_code`, `markdown_code_block` | a backtick fence longer than any run inside: nothing closes it early |
| LaTeX (the PDF's title and author) | `latex` | the ten special characters and `<`, `>`, `|` as text commands; no control sequence survives |
| HTML (report.html text, plotly labels) | `html` | `html.escape` with quotes |
| Python source (the bundle's plot scripts) | `python` | an expression that evaluates to the value: `json.loads(<str literal>)`, a literal repr() cannot break out of |
| shell source (the run-all script) | `shell` | `shlex.quote` |
| a command line printed for the user to run (`next: copylab report PATH`) | `shell_path` | one word, never an option |

Control characters other than tab and newline are dropped first (a terminal escape in a host name
must not reach a PDF, a page or a script), and so are the bidirectional controls (which reorder the
text around them: `B\u202eevil.exe` shows as "Bexe.live") and the line and paragraph separators
(U+2028, U+2029, U+0085: a line break nobody typed). That is `clean`, the one filter of text that
reaches a PDF or a page; a value copylab refuses instead (a label) names the first such character
with `unsafe_character`, and a message shows a value the user gave with `quoted` (cut when long).
"""

from __future__ import annotations

import html as _html
import json
import re
import shlex
import string
import unicodedata

_PUNCTUATION = frozenset(string.punctuation)  # CommonMark and pandoc honour a backslash before each
# bidirectional controls: Arabic letter mark, LRM/RLM, embeddings and overrides (LRE RLE PDF LRO
# RLO), isolates (LRI RLI FSI PDI)
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029{_BIDI}]")
_UNSAFE = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029{_BIDI}]")  # in one line: tab and newline too
QUOTED_MAX = 60  # characters of a value a message shows
_BACKTICKS = re.compile(r"`+")


def clean(text) -> str:
    """str(text) without control characters (tab and newline kept), CRLF as LF."""
    return _CONTROL.sub("", str(text).replace("\r\n", "\n").replace("\r", "\n"))


def unsafe_character(text) -> str | None:
    """The first character of text that clean() would drop, or a tab or line break (a one-line value
    holds none), as "U+202E (RIGHT-TO-LEFT OVERRIDE)"; None when there is none."""
    found = _UNSAFE.search(str(text))
    if found is None:
        return None
    char = found.group()
    name = unicodedata.name(char, "") or {"\t": "TAB", "\n": "LINE FEED", "\r": "CARRIAGE RETURN"}.get(char, "a control character")
    return f"U+{ord(char):04X} ({name})"


def quoted(value, limit: int = QUOTED_MAX) -> str:
    """A value the user gave, for a one-line message: quoted as Python quotes it (control and bidi
    characters shown as escapes, so nothing reorders or breaks the line) and, past limit characters,
    cut with its length said."""
    text = str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def quoted_path(path) -> str:
    """A path the user gave, for a one-line message: quoted as quoted() does, never cut (a path is
    acted on whole)."""
    return repr(str(path))


def one_line(message: str, limit: int = 2000) -> str:
    """A message as one terminal line: tabs, line breaks, control and bidi characters shown as
    escapes; past limit characters cut in the middle (a value no check cut must not fill a screen)."""
    text = _UNSAFE.sub(lambda m: repr(m.group())[1:-1], str(message))
    if len(text) > limit:
        text = f"{text[:limit - 200]} ... ({len(text) - limit + 100} characters cut) ... {text[-100:]}"
    return text


def _one_line(text: str) -> str:
    return " ".join(text.split()) if ("\n" in text or "\t" in text) else text


# ------------------------------------------------------------------------------------------------
# Markdown (rendered by pandoc for the PDF and by mistune for the HTML)

def markdown(text, *, block: bool = False) -> str:
    """text as Markdown that renders as exactly that text. Inline (default): whitespace runs with
    newlines become one space (a table cell, a list item); block (a declaration, itself a .md file):
    a blank line separates paragraphs and a line that starts a list item keeps its own line, while
    any other line break is the editor's wrap and flows with the text (kept as typed, it would break
    the typeset line wherever the file happened to wrap)."""
    text = clean(text)
    if not block:
        text = _one_line(text)
        return "".join("\\" + c if c in _PUNCTUATION else c for c in text)
    paragraphs = re.split(r"\n\s*\n", text.strip("\n"))
    return "\n\n".join(_block_lines(para) for para in paragraphs)


_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")


def _block_lines(paragraph: str) -> str:
    """One paragraph of a block: wrapped lines joined with a space, a hard break before each list item."""
    lines = [line.strip() for line in paragraph.split("\n") if line.strip()]
    out = []
    for line in lines:
        if out and not _LIST_ITEM.match(line):
            out[-1] += " " + line
        else:
            out.append(line)
    return "\\\n".join(markdown(line) for line in out)


def markdown_prose(text) -> str:
    """Prose copylab composed (answers, notes) with values from outside inside it: emphasis with
    `*` and code spans stay Markdown; every other punctuation character is escaped, so a value can
    add neither raw HTML/TeX, nor links, nor math. Code spans are found as CommonMark finds them
    (a backtick run closes only on a run of the same length), so what stays verbatim here is code
    to the renderer too, and code is shown literally by both."""
    text = clean(text)
    out, i = [], 0
    for start, end in _code_spans(text):
        out.append(_escape_prose(text[i:start]))
        out.append(text[start:end].replace("\n", " "))
        i = end
    out.append(_escape_prose(text[i:]))
    return "".join(out)


def _escape_prose(text: str) -> str:
    return "".join("\\" + c if c in _PUNCTUATION and c != "*" else c for c in text)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each code span, by CommonMark's rule (no backslash can precede an opener
    here: outside spans every backslash is escaped itself)."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    spans, k = [], 0
    while k < len(runs):
        start, end = runs[k]
        length = end - start
        close = next((j for j in range(k + 1, len(runs)) if runs[j][1] - runs[j][0] == length), None)
        if close is None:
            k += 1  # an unmatched run is literal backticks (escaped with the rest)
            continue
        spans.append((start, runs[close][1]))
        k = close + 1
    return spans


def markdown_code(text) -> str:
    """An inline code span showing text literally (one line)."""
    text = _one_line(clean(text))
    fence = "`" * (max((len(r) for r in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_code_block(text) -> str:
    """A fenced code block showing text literally, whatever lines it holds."""
    text = clean(text).strip("\n")
    fence = "`" * max(3, max((len(r) for r in _BACKTICKS.findall(text)), default=0) + 1)
    return f"{fence}\n{text}\n{fence}"


# ------------------------------------------------------------------------------------------------
# LaTeX, HTML, Python, shell

_LATEX = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#", "%": r"\%",
    "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}", "<": r"\textless{}",
    ">": r"\textgreater{}", "|": r"\textbar{}", "`": r"\textasciigrave{}",
    "-": "-{}",  # no -- or --- ligature: a name's two hyphens stay two hyphens
}


def latex(text) -> str:
    """text as LaTeX text (one line): every special character a text command, nothing executed."""
    return "".join(_LATEX.get(c, c) for c in _one_line(clean(text)))


def html(text) -> str:
    """text as HTML text or attribute value (plotly's labels decode entities the same way)."""
    return _html.escape(clean(text), quote=True)


def python(value, width: int = 100) -> str:
    """A Python expression that evaluates to value (JSON data): `json.loads(...)` of a string
    literal made by repr(), which Python guarantees to read back as the same string (a long value
    is split into one literal per line, concatenated). The generated file must import json."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    if len(text) <= width:
        return f"json.loads({text!r})"
    lines = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=1).splitlines(keepends=True)
    return "json.loads(\n" + "".join(f"    {line!r}\n" for line in lines) + ")"


def shell(text) -> str:
    """text as one shell word."""
    return shlex.quote(clean(text))


def shell_path(path) -> str:
    """A path as one shell word a command reads as a path: quoted, and "./" before a relative path
    that starts with "-" (it would be read as an option)."""
    text = str(path)
    return shell(f"./{text}" if text.startswith("-") else text)
