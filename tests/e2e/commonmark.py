"""The CommonMark spec's examples run through the page's Markdown renderer
(web/markdown.js) in the browser, and compared with the spec's HTML after normalisation.

Shared by tests/e2e/test_markdown.py (which asserts the rates) and
scripts/commonmark_conformance.py (which prints the per-section table).

Each example is rendered twice, by the renderer's own DOM walk (never by HTML strings):
``spec`` with CommonMark's settings (no tables, soft breaks as newlines, no bare-URL links,
every link target markdown-it accepts, headings at their own level) to measure
conformance, and ``page`` with the settings the chat uses. Examples that exercise what
the page deliberately does not render are set apart: raw HTML (an example is counted as
raw HTML when markdown-it renders it differently with HTML on) and images.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path

SPEC = Path(__file__).resolve().parents[1] / "data" / "commonmark-spec-0.31.2.json"
BLANK = "/__markdown_blank__.html"

# Runs in the page: every example through web/markdown.js, as HTML text for comparison
# (serialising the built DOM here is the test's business; the page never parses HTML).
RENDER_EXAMPLES = """async (examples) => {
  const md = await import('/markdown.js');
  const {default: MarkdownIt} = await import('/vendor/markdown-it-15.0.3/markdown-it.esm.min.mjs');
  const strict = md.createParser({strict: true});
  const withHtml = new MarkdownIt('commonmark');
  const withoutHtml = new MarkdownIt('commonmark', {html: false});
  return examples.map((text) => {
    const spec = document.createElement('div');
    md.build(strict.parse(text, {}), spec, {headingOffset: 0, breaks: false, safe: false});
    const page = document.createElement('div');
    md.render(text, page);
    return {spec: spec.innerHTML, page: page.innerHTML,
            rawHtml: withHtml.render(text) !== withoutHtml.render(text)};
  });
}"""

BLOCK_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "li", "pre",
              "hr", "table", "thead", "tbody", "tr", "th", "td", "div"}


class _Normaliser(HTMLParser):
    """HTML in a canonical form: entities decoded and re-escaped one way, attributes
    sorted, runs of whitespace outside <pre> as one space, none next to block tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.in_pre = 0

    def _strip_tail(self) -> None:
        while self.out and not self.out[-1].startswith("<") and not self.out[-1].strip():
            self.out.pop()
        if self.out and not self.out[-1].startswith("<"):
            self.out[-1] = self.out[-1].rstrip()

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in BLOCK_TAGS and not self.in_pre:
            self._strip_tail()
        if tag == "pre":
            self.in_pre += 1
        text = "".join(' %s="%s"' % (name, html.escape(value or "", quote=True))
                       for name, value in sorted(attrs))
        self.out.append("<%s%s>" % (tag, text))

    def handle_startendtag(self, tag: str, attrs) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self.in_pre -= 1
        if tag in BLOCK_TAGS and not self.in_pre:
            self._strip_tail()
        self.out.append("</%s>" % tag)

    def handle_data(self, data: str) -> None:
        if not self.in_pre:
            data = re.sub(r"\s+", " ", data)
            last = self.out[-1] if self.out else "<p>"
            if last.startswith("<") and (last.strip("</>").split(" ")[0] in BLOCK_TAGS
                                         or last == "<br>"):
                data = data.lstrip()
        self.out.append(html.escape(data, quote=False))


def normalise(markup: str) -> str:
    parser = _Normaliser()
    parser.feed(markup)
    parser.close()
    parser._strip_tail()
    return "".join(parser.out).replace("</br>", "")


def load_examples() -> list[dict]:
    return json.loads(SPEC.read_text(encoding="utf-8"))


def open_blank(page, base_url: str) -> None:
    """An empty page of the app's origin (so /markdown.js and its vendored parser load)."""
    page.route(base_url + BLANK, lambda route: route.fulfill(
        status=200, content_type="text/html",
        body="<!doctype html><meta charset=utf-8><title>markdown</title>"))
    page.goto(base_url + BLANK)


def run(page, base_url: str) -> list[dict]:
    """Every spec example with its outcome: ``kind`` is "rendered", "raw HTML" or
    "image"; ``spec_ok``/``page_ok`` say whether the normalised output matched."""
    examples = load_examples()
    open_blank(page, base_url)
    outputs = page.evaluate(RENDER_EXAMPLES, [e["markdown"] for e in examples])
    results = []
    for example, out in zip(examples, outputs):
        expected = normalise(example["html"])
        kind = ("raw HTML" if out["rawHtml"] else
                "image" if "<img" in example["html"] else "rendered")
        results.append({**example, "kind": kind, "expected": expected,
                        "spec_html": normalise(out["spec"]), "page_html": normalise(out["page"]),
                        "spec_ok": normalise(out["spec"]) == expected,
                        "page_ok": _page_matches(normalise(out["page"]), expected)})
    return results


def _page_matches(page_html: str, expected: str) -> bool:
    """The page's output against the spec's, with the page's presentation undone: headings
    two levels down and links opening in a new tab (rel/target), fenced code's
    class and data-lang on <pre>."""
    page_html = re.sub(r"<(/?)h([3-6])( [^>]*)?>",
                       lambda m: "<%sh%d>" % (m.group(1), int(m.group(2)) - 2), page_html)
    page_html = re.sub(r' (rel|target)="[^"]*"', "", page_html)
    page_html = re.sub(r'<pre[^>]*>', "<pre>", page_html)
    return page_html == expected


def table(results: list[dict]) -> list[dict]:
    """Per section: examples, those set apart (raw HTML, images), rendered ones and how
    many of them match in ``spec`` and ``page`` settings."""
    rows: dict[str, dict] = defaultdict(lambda: defaultdict(int))
    for result in results:
        row = rows[result["section"]]
        row["examples"] += 1
        if result["kind"] != "rendered":
            row[result["kind"]] += 1
            continue
        row["rendered"] += 1
        row["spec_ok"] += result["spec_ok"]
        row["page_ok"] += result["page_ok"]
    return [{"section": name, **row} for name, row in rows.items()]
