"""web/ui/markdown.py's parse() in CPython: the Markdown the page renders, and what a
hostile or broken answer must not get through (raw HTML, script links, deep nesting,
inputs made to be slow).

The module is the page's (MicroPython via PyScript); its parsing part is plain Python
with no browser import, so it is imported here from web/ directly.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

WEB = str(Path(__file__).resolve().parents[2] / "web")
if WEB not in sys.path:
    sys.path.insert(0, WEB)

from ui import markdown as md  # noqa: E402

parse = md.parse


def inlines(text: str) -> list:
    """The inline nodes of a text that parses to one paragraph."""
    [(kind, nodes)] = parse(text)
    assert kind == "p"
    return nodes


def nodes(tree):
    """Every block and inline node (a tuple) anywhere in parsed blocks or inlines."""
    if isinstance(tree, tuple):
        yield tree
        for part in tree[1:]:
            yield from nodes(part)
    elif isinstance(tree, list):
        for part in tree:
            yield from nodes(part)


def links(blocks) -> list[str]:
    """Every link target anywhere in parsed blocks or inlines."""
    return [node[1] for node in nodes(blocks) if node[0] == "link"]


def block_depth(blocks) -> int:
    """How deep quotes and lists nest."""
    deepest = 0
    for block in blocks:
        if block[0] == "quote":
            deepest = max(deepest, 1 + block_depth(block[1]))
        elif block[0] in ("ul", "ol"):
            deepest = max([deepest] + [1 + block_depth(item) for item in block[-1]])
    return deepest


def inline_depth(nodes) -> int:
    deepest = 0
    for node in nodes:
        if node[0] in ("strong", "em", "del"):
            deepest = max(deepest, 1 + inline_depth(node[1]))
        elif node[0] == "link":
            deepest = max(deepest, 1 + inline_depth(node[2]))
    return deepest


def test_parsing_needs_no_browser() -> None:
    # Only render() touches the DOM (ui.dom, hence pyscript), and only when it runs.
    assert "pyscript" not in sys.modules and "ui.dom" not in sys.modules


# ------------------------------------------------------------------ constructs

def test_paragraphs_keep_line_breaks_and_blank_lines_split_them() -> None:
    assert parse("one\ntwo\n\nthree") == [
        ("p", [("text", "one"), ("br",), ("text", "two")]),
        ("p", [("text", "three")])]
    assert parse("") == [] and parse("  \n\n ") == []
    assert parse("a\r\nb") == parse("a\nb")


def test_headings() -> None:
    assert parse("# Title *now*") == [("h", 1, [("text", "Title "), ("em", [("text", "now")])])]
    assert parse("### Three ###") == [("h", 3, [("text", "Three")])]
    assert parse("####### seven")[0][0] == "p"
    assert parse("#hashtag")[0][0] == "p"


def test_inline_emphasis_code_and_escapes() -> None:
    assert inlines("**b** *i* ~~d~~ `c` ***bi***") == [
        ("strong", [("text", "b")]), ("text", " "), ("em", [("text", "i")]), ("text", " "),
        ("del", [("text", "d")]), ("text", " "), ("code", "c"), ("text", " "),
        ("strong", [("em", [("text", "bi")])])]
    assert inlines("__b__ and _i_") == [("strong", [("text", "b")]), ("text", " and "),
                                       ("em", [("text", "i")])]
    assert inlines("snake_case_names stay") == [("text", "snake_case_names stay")]
    assert inlines(r"\*not\* \`code\` \[x\](y) \<b>") == [("text", "*not* `code` [x](y) <b>")]
    assert inlines("``a ` b``") == [("code", "a ` b")]
    assert inlines("`x < y` **`bold code`**") == [
        ("code", "x < y"), ("text", " "), ("strong", [("code", "bold code")])]


def test_unclosed_markers_stay_text() -> None:
    assert inlines("**half bold and `half code") == [("text", "**half bold and `half code")]
    assert inlines("a * b * c") == [("text", "a * b * c")]


def test_code_blocks_keep_their_text_verbatim() -> None:
    assert parse("```python\nprint('<b>**x**</b>')\n  indented\n```") == [
        ("code", "python", "print('<b>**x**</b>')\n  indented")]
    assert parse("~~~\nx\n~~~~") == [("code", "", "x")]
    # An unclosed fence (a half-streamed answer) runs to the end.
    assert parse("```js\nlet a = 1;") == [("code", "js", "let a = 1;")]


def test_lists_nested_and_numbered() -> None:
    assert parse("- a\n- b\n  - c\n\n3. x\n4. y") == [
        ("ul", [[("p", [("text", "a")])],
                [("p", [("text", "b")]), ("ul", [[("p", [("text", "c")])]])]]),
        ("ol", 3, [[("p", [("text", "x")])], [("p", [("text", "y")])]])]
    # Bullets of another kind start another list; a lazy line continues the item.
    assert [b[0] for b in parse("- a\n+ b")] == ["ul", "ul"]
    assert parse("- first\ncontinued") == [
        ("ul", [[("p", [("text", "first"), ("br",), ("text", "continued")])]])]
    # Only "1." interrupts a paragraph, so a number in a sentence stays text.
    assert parse("I have\n2. things")[0] == ("p", [("text", "I have"), ("br",),
                                                   ("text", "2. things")])


def test_quotes_rules_and_tables() -> None:
    assert parse("> q\n> > qq\nlazy") == [
        ("quote", [("p", [("text", "q")]),
                   ("quote", [("p", [("text", "qq"), ("br",), ("text", "lazy")])])])]
    assert parse("a\n\n---\n\n***") == [("p", [("text", "a")]), ("hr",), ("hr",)]
    assert parse("| a | b | c |\n|:-|-:|:-:|\n| 1 | 2 |\n| x \\| y | **z** | 3 | extra |") == [
        ("table", ["left", "right", "center"],
         [[("text", "a")], [("text", "b")], [("text", "c")]],
         [[[("text", "1")], [("text", "2")], []],
          [[("text", "x | y")], [("strong", [("text", "z")])], [("text", "3")]]])]
    # No delimiter row: not a table.
    assert parse("a | b\nc | d")[0][0] == "p"


def test_links_of_every_form() -> None:
    assert inlines("[the *docs*](https://example.com/d?q=1 \"title\")") == [
        ("link", "https://example.com/d?q=1", [("text", "the "), ("em", [("text", "docs")])])]
    assert inlines("<https://x.org/a>") == [("link", "https://x.org/a", [("text", "https://x.org/a")])]
    # Bare URLs leave trailing punctuation and an unbalanced ")" outside.
    assert inlines("see https://ex.com/a_(b). (or http://ex.org/x)") == [
        ("text", "see "), ("link", "https://ex.com/a_(b)", [("text", "https://ex.com/a_(b)")]),
        ("text", ". (or "), ("link", "http://ex.org/x", [("text", "http://ex.org/x")]),
        ("text", ")")]
    assert links(parse("[ok](HTTP://A.B)")) == ["HTTP://A.B"]
    # No link inside a link's label.
    assert links(parse("[a https://b.c](https://d.e)")) == ["https://d.e"]


def test_plain_text_for_announcements() -> None:
    blocks = parse("# H\n\nSome **bold** [link](https://x.y)\n\n- a\n- b\n\n"
                   "| x | y |\n|-|-|\n| 1 | 2 |\n\n```\ncode\n```")
    assert md.plain_text(blocks) == "H\nSome bold link\na\nb\nx, y\n1, 2\ncode"


# ------------------------------------------------------------------ hostile input

@pytest.mark.parametrize("html", [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<b>bold</b> & <i>it</i>",
    '<a href="javascript:alert(1)">x</a>',
    "<!-- comment --><iframe src=//evil></iframe>",
])
def test_raw_html_stays_text(html: str) -> None:
    assert inlines(html) == [("text", html)]
    assert inlines("**" + html + "**") == [("strong", [("text", html)])]


def test_raw_html_in_every_block_stays_text() -> None:
    text = "# <h1>x</h1>\n\n- <script>1</script>\n\n> <style>*{}</style>\n\n| <td> |\n|-|\n| <tr> |"
    blocks = parse(text)
    assert {node[0] for node in nodes(blocks)} == {"h", "ul", "quote", "table", "p", "text"}
    assert "<script>1</script>" in md.plain_text(blocks)


@pytest.mark.parametrize("source", [
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x]( javascript:alert(1) )",
    "[x](<javascript:alert(1)>)",
    "[x](data:text/html,<script>alert(1)</script>)",
    "[x](vbscript:msgbox(1))",
    "[x](file:///etc/passwd)",
    "[x](//evil.example/path)",
    "[x](/relative/path)",
    "[x](http://)",
    '[x](https://a.b/"onmouseover=alert(1))',
    "[x](https://a.b/`x`)",
    "[x](https://a.b/\\x)",
    "<javascript:alert(1)>",
    "<data:text/html,hi>",
    "javascript:alert(1)",
])
def test_links_other_than_http_are_not_links(source: str) -> None:
    blocks = parse(source)
    assert links(blocks) == []
    assert md.plain_text(blocks) == source   # the whole source, as text


def test_safe_url() -> None:
    assert md.safe_url(" https://a.b/c ") == "https://a.b/c"
    for url in ("https://", "ftp://a.b", "https://a b", "https://a.b/\x00",
                "https://" + "a" * md.MAX_URL):
        assert md.safe_url(url) is None, url


def test_deep_block_nesting_is_capped() -> None:
    quotes = parse("> " * 200 + "deep")
    assert block_depth(quotes) == md.MAX_DEPTH
    assert "deep" in md.plain_text(quotes)
    nested_list = "\n".join("  " * level + "- item %d" % level for level in range(300))
    blocks = parse(nested_list)
    assert block_depth(blocks) <= md.MAX_DEPTH
    assert "item 299" in md.plain_text(blocks)   # nothing lost, only flattened


def test_deep_inline_nesting_is_capped(monkeypatch) -> None:
    # Seven distinct delimiters, one inside the other.
    text = "x"
    for delimiter in ("*", "**", "~~", "_", "__", "***", "___"):
        text = delimiter + "a " + text + " a" + delimiter
    assert inline_depth(inlines(text)) == 9       # *** and ___ are strong + em
    # With a lower cap, what lies deeper stays literal text.
    monkeypatch.setattr(md, "MAX_DEPTH", 3)
    capped = inlines(text)
    assert inline_depth(capped) == 5              # 3 levels: ___, *** and __
    assert "_a ~~a **a *a x a* a** a~~ a_" in md.plain_text(parse(text))


# Inputs made to be slow for a naive parser (quadratic or exponential searches); each
# must parse quickly and without hitting the recursion limit.
SLOW_INPUTS = {
    "open brackets": "[" * 20_000 + "](" * 5_000,
    "unclosed links": "[a](" * 10_000,
    "unclosed emphasis": "*a " * 20_000,
    "emphasis runs": "**" * 20_000,
    "underscores": "_a" * 20_000,
    "backticks": "`" * 20_000 + "a`b``c" * 3_000,
    "tildes": "~~a" * 20_000,
    "quotes": "> " * 5_000 + "x",
    "nested list": "\n".join("  " * n + "- x" for n in range(300)),
    "bare URL parens": "https://a.b/" + "(" * 20_000,
    "angle URLs": "<https://" * 20_000,
    "table rows": "|a|\n|-|\n" + "|x|\n" * 20_000,
    "long paragraph": "word " * 100_000,
    "mixed": "*_[`<h" * 20_000,
    "nested stars": "*" * 5_000 + "a" + "*" * 5_000,
    "fences": "```\n" * 20_000,
    "backslashes": "\\" * 50_000,
    "hashes": "#" * 50_000,
    "numbered": "1. x\n" * 20_000,
}


@pytest.mark.parametrize("name", list(SLOW_INPUTS))
def test_long_hostile_inputs_parse_fast(name: str) -> None:
    text = SLOW_INPUTS[name]
    started = time.perf_counter()
    blocks = parse(text)
    took = time.perf_counter() - started
    assert took < 1.0, f"{name}: {took:.2f}s for {len(text)} characters"
    assert block_depth(blocks) <= md.MAX_DEPTH
