"""copylab.escape (issue 23): one escaping function per target, tried against the real renderers
(pandoc for the PDF's Markdown, nbconvert's mistune for the HTML, xelatex, Python, bash) with the
names that broke the report and with injections that must stay text."""

from __future__ import annotations

import ast
import html
import json
import re
import subprocess

import pytest
from nbconvert.filters.markdown import markdown2html_mistune, markdown2latex

from copylab import escape

ORDINARY = ["john_doe", "Tom & Jerry", "Ann #1", "50% done", r"C:\Users\me\newdir", "{", "<", "}", "a|b",
            "O'Brien \"Bob\"", "x^2 ~y", "$HOME", "100$", "*bold*", "__init__", "1. first", "- dash", "# hash",
            "> quote", "`code`", "```", "[link]", "a -- b", "... end", "% leading percent", "@cite"]
INJECTIONS = [r"Eve \protect\input{/etc/hostname}", r"\write18{touch /tmp/copylab-pwned}", "<img src=x onerror=alert(1)>",
              "<script>alert(1)</script>", "[x](javascript:alert(1))", "![i](/etc/passwd)", "<https://evil.example>",
              "&lt;b&gt;", "$\\input{/etc/hostname}$", "\\[x\\]", "`{=latex}", "<!-- hidden -->", ":::"]
SCRIPTS = ["अदिति शर्मा", "李小龙", "山田太郎", "김민수", "דוד כהן", "😀🎉"]


def visible_html(markup: str) -> str:
    """The text an HTML page shows (tags dropped, entities decoded), whitespace squeezed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", markup)).split())


@pytest.mark.parametrize("text", ORDINARY + INJECTIONS + SCRIPTS)
def test_markdown_renders_as_typed_in_html_and_creates_no_tag(text):
    rendered = markdown2html_mistune(escape.markdown(text))
    assert visible_html(rendered) == " ".join(text.split())
    assert re.findall(r"<(\w+)", rendered) == ["p"], rendered  # one paragraph, nothing else


@pytest.mark.parametrize("text", ORDINARY + INJECTIONS)
def test_markdown_gives_pandoc_latex_without_a_command_of_the_value(text):
    latex = markdown2latex(escape.markdown(text))
    commands = set(re.findall(r"\\([A-Za-z]+)", latex))
    # what pandoc itself writes for literal characters; never \input, \write, \protect, \href...
    assert commands <= {"textbackslash", "textless", "textgreater", "textbar", "textasciitilde",
                        "textasciicircum", "ldots", "textquotesingle", "textquotedbl", "textasciigrave"}, latex


@pytest.mark.slow
def test_every_target_renders_the_ordinary_names_literally_in_a_pdf(tmp_path):
    """One document through xelatex: each name via escape.latex (the title/author path) and via
    escape.markdown + pandoc (the report's cells); pdftotext must read every one back as typed."""
    # pandoc's LaTeX sets a plain backtick as an opening quote (TeX typography): left out here
    names = [n for n in ORDINARY + INJECTIONS if "`" not in n]
    lines = []
    for k, name in enumerate(names):
        lines.append(f"L{k}: {escape.latex(name)} :E\\par")
        lines.append(f"M{k}: {markdown2latex(escape.markdown(name)).strip()} :E\\par")
    tex = tmp_path / "t.tex"
    tex.write_text("\\documentclass{article}\\usepackage{fontspec}\\usepackage[T1]{fontenc}\n"
                   "\\begin{document}\\raggedright\n" + "\n".join(lines) + "\n\\end{document}\n")
    proc = subprocess.run(["xelatex", "-interaction=nonstopmode", "-no-shell-escape", tex.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    text = subprocess.run(["pdftotext", "-raw", str(tmp_path / "t.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout
    # pdftotext reads LaTeX's typeset quotes and dashes as typography (and pandoc sets ^ as the
    # circumflex accent, U+02C6): compare what a reader sees
    typography = str.maketrans({"“": '"', "”": '"', "’": "'", "‘": "'", "–": "--", "—": "---", "…": "...",
                                "ˆ": "^", "ﬁ": "fi", "ﬂ": "fl", "ﬀ": "ff", "ﬃ": "ffi"})
    got = {m.group(1) + m.group(2): m.group(3).translate(typography) for m in re.finditer(r"([LM])(\d+): (.*?) :E", text)}
    for k, name in enumerate(names):
        for target in "LM":
            assert got.get(f"{target}{k}") == " ".join(name.split()), (target, name, got.get(f"{target}{k}"))
    assert not (tmp_path / "copylab-pwned").exists()


def test_markdown_block_keeps_paragraphs_and_list_lines_and_flows_wrapped_lines():
    """A declaration is a .md file: a line its editor wrapped flows on (printed as typed, the template's
    wrap broke the PDF's line: issue 33 item 28); a blank line and a list item keep their break."""
    text = ("AI-usage: I used C:\\Users\\me\\newdir\nsecond <b>line</b>\n- a list item\n2. another\n\n"
            "# not a heading")
    rendered = markdown2html_mistune(escape.markdown(text, block=True))
    assert re.findall(r"<(\w+)", rendered) == ["p", "br", "br", "p"], rendered
    assert "newdir second &lt;b&gt;line&lt;/b&gt;" in rendered.replace("\\", "\\")
    assert "C:\\Users\\me\\newdir" in html.unescape(rendered) and "- a list item" in html.unescape(rendered)


def test_markdown_prose_keeps_emphasis_and_code_but_not_markup_from_values():
    prose = "**A3** copies in `skb_copy_ubufs`; perf says <not supported> " + INJECTIONS[0] + " " + INJECTIONS[2]
    rendered = markdown2html_mistune(escape.markdown_prose(prose))
    assert re.findall(r"<(\w+)", rendered) == ["p", "strong", "code"], rendered
    assert "&lt;not supported&gt;" in rendered and "&lt;img" in rendered
    assert "\\input" not in markdown2latex(escape.markdown_prose(prose)).replace("\\textbackslash", "")
    # code spans are found as CommonMark finds them: a value cannot end one early and go on as markup
    for tricky in ("``a` \\input{f} `b``", "`` \\input{f} `", "x `a``b` \\input{g}", "\\`\\input{x}`"):
        latex = markdown2latex(escape.markdown_prose(tricky))
        assert not re.search(r"\\input\{", latex.replace("\\textbackslash{}", "").replace("\\textbackslash", "")) \
            or "\\texttt{" in latex, (tricky, latex)


def test_markdown_code_block_cannot_be_closed_by_its_content():
    content = "```\n\\end{verbatim}\n\\input{/etc/hostname}\n<script>x</script>\n````"
    block = escape.markdown_code_block(content)
    rendered = markdown2html_mistune(block)
    assert rendered.count("<pre>") == 1 and html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip() == content
    latex = markdown2latex(block)
    assert "\\input{" not in latex and "\\end{verbatim}\n\\input" not in latex
    span = escape.markdown_code("a`b``c")
    assert visible_html(markdown2html_mistune(span)) == "a`b``c"


def test_latex_escapes_every_special_character_and_drops_control_characters():
    assert escape.latex(r"\input{x} & % $ # _ ^ ~ < > | ` --") == (
        r"\textbackslash{}input\{x\} \& \% \$ \# \_ \textasciicircum{} \textasciitilde{} \textless{} "
        r"\textgreater{} \textbar{} \textasciigrave{} -{}-{}")
    assert escape.latex("a\nb\x1b[31mc\x00") == "a b[31mc"


def test_html_escapes_tags_and_quotes():
    assert escape.html('<a href="javascript:x">\'') == "&lt;a href=&quot;javascript:x&quot;&gt;&#x27;"


@pytest.mark.parametrize("value", ['"""; import os; os.system("touch /tmp/x") #', "'''\\", "a\nb\rc\u2028d\x00",
                                   "\\N{BULLET}", {"k": ['"', "'", None, 1.0000000000000002, 2**60]}, "é" * 500])
def test_python_gives_an_expression_that_is_only_the_value(value):
    source = escape.python(value)
    tree = ast.parse(source, mode="eval")
    call = tree.body
    assert isinstance(call, ast.Call) and ast.unparse(call.func) == "json.loads" and len(call.args) == 1
    assert isinstance(call.args[0], (ast.Constant, ast.JoinedStr)) and not isinstance(call.args[0], ast.JoinedStr)
    assert eval(compile(tree, "<data>", "eval"), {"json": json}) == value


@pytest.mark.parametrize("value", ["plain", "a b", "'", '"', "$(touch /tmp/x)", "`id`", "a\nb", "-n", "*", ""])
def test_shell_gives_one_word(value):
    out = subprocess.run(["bash", "-c", f"printf '%s|' {escape.shell(value)}"], capture_output=True, text=True,
                         check=True).stdout
    assert out == escape.clean(value) + "|"


# bidirectional controls reorder what follows them ("B\u202eevil.exe" printed "Bexe.live" in the PDF), line
# and paragraph separators break a line nobody typed, C0/C1 controls vanish or drive a terminal (issue 46)
UNSEEN = ["\u202e", "\u202d", "\u202a", "\u202b", "\u202c", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f",
          "\u061c", "\u2028", "\u2029", "\x85", "\x1b", "\x00", "\x7f", "\x9b"]


@pytest.mark.parametrize("char", UNSEEN, ids=[f"U+{ord(c):04X}" for c in UNSEEN])
def test_bidi_controls_and_separators_are_filtered_out_of_every_page_target(char):
    text = f"B{char}evil.exe"
    for target in (escape.markdown, escape.markdown_prose, escape.markdown_code, escape.latex, escape.html,
                   escape.clean):
        assert char not in target(text), target.__name__
    assert visible_html(markdown2html_mistune(escape.markdown(text))) == "Bevil.exe"
    assert escape.unsafe_character(text) == f"U+{ord(char):04X} " + escape.unsafe_character(char).split(" ", 1)[1]


def test_the_first_unsafe_character_is_named_by_its_code_point():
    assert escape.unsafe_character("B\u202eevil.exe") == "U+202E (RIGHT-TO-LEFT OVERRIDE)"
    assert escape.unsafe_character("a\u2066b\u202ec") == "U+2066 (LEFT-TO-RIGHT ISOLATE)"
    assert escape.unsafe_character("two\nlines") == "U+000A (LINE FEED)"
    assert escape.unsafe_character("\x1b[31m") == "U+001B (a control character)"
    # every script a name may be written in, and the joiners its letters need, pass
    for name in SCRIPTS + ["naïve café", "क्‍ष", "👩‍💻", "a\u00a0b"]:
        assert escape.unsafe_character(name) is None, name


def test_a_value_in_a_message_is_quoted_visibly_and_cut_when_long():
    assert escape.quoted("my results") == "'my results'"
    assert escape.quoted("B\u202eevil") == "'B\\u202eevil'" and "\u202e" not in escape.quoted("B\u202eevil")
    assert escape.quoted("a\nb") == "'a\\nb'"
    long = escape.quoted("x" * 10_000)
    assert len(long) < 100 and long.endswith("... (10000 characters)") and long.startswith("'xxx")


def test_a_message_is_one_line_whatever_it_holds():
    message = escape.one_line("output/a\nb: no such folder \u202eevil\t" + "y" * 10_000 + " end")
    assert "\n" not in message and "\u202e" not in message and "\t" not in message
    assert message.startswith("output/a\\nb: no such folder \\u202eevil\\t") and message.endswith("y end")
    assert len(message) < 2100 and "characters cut" in message
    assert escape.one_line("plain, unchanged") == "plain, unchanged"


@pytest.mark.parametrize("path", ["my results", "-rf", "it's", "$(touch x)", "/abs/-x", "a\u202eb"])
def test_a_path_in_a_printed_command_is_one_word_and_never_an_option(path):
    out = subprocess.run(["bash", "-c", f"printf '%s|' {escape.shell_path(path)}"], capture_output=True, text=True,
                         check=True).stdout
    expected = escape.clean(path)
    assert out == ("./" + expected if expected.startswith("-") else expected) + "|"
