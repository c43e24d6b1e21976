"""web/markdown.js in the browser: CommonMark conformance on the spec's own examples, the
page's link and image rules, hostile input, and streamed previews that rebuild only what
can still change yet always show what a full render shows.

The chat itself (answers, previews, injected markup through the model and tools) is
tested in test_chat_rendering.py; here the module is imported into an empty page of the
app's origin, so thousands of renders take seconds.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page

from tests.e2e import commonmark
from tests.e2e.long_answers import long_answer, nested_list

pytestmark = pytest.mark.e2e


@pytest.fixture
def page(quick_page):
    """Each test here takes a new page in a browser profile the file's tests share, its
    storage cleared and checked empty first (conftest.py, tests/e2e/shared_profile.py)."""
    return quick_page

# Sections of the spec about what the chat renders; raw HTML and images are set apart
# per example (see commonmark.py).
CONSTRUCTS = ["Tabs", "Backslash escapes", "Entity and numeric character references",
              "Thematic breaks", "ATX headings", "Setext headings", "Indented code blocks",
              "Fenced code blocks", "Link reference definitions", "Paragraphs",
              "Block quotes", "List items", "Lists", "Code spans",
              "Emphasis and strong emphasis", "Links", "Autolinks", "Hard line breaks",
              "Soft line breaks", "Textual content"]

MADE_BY_MARKDOWN = {"p", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "li", "pre", "code",
                    "em", "strong", "s", "a", "br", "hr", "table", "thead", "tbody", "tr",
                    "th", "td"}


def test_commonmark_conformance(page: Page, app_server: str) -> None:
    results = commonmark.run(page, app_server)
    rows = {row["section"]: row for row in commonmark.table(results)}
    rendered = [r for r in results if r["kind"] == "rendered"]
    assert len(results) == 652 and len(rendered) > 550
    assert sum(r["spec_ok"] for r in rendered) / len(rendered) >= 0.95
    for section in CONSTRUCTS:
        row = rows[section]
        assert row["spec_ok"] / row["rendered"] >= 0.9, (section, dict(row))
    # With the page's settings, raw HTML examples show their markup as text and image
    # examples make no <img>: only elements Markdown makes appear.
    for result in results:
        tags = set(re.findall(r"<([a-z0-9]+)", result["page_html"]))
        assert tags <= MADE_BY_MARKDOWN, (result["example"], result["page_html"])


# Run in the page: stream each text in prefixes growing by ``step`` characters through
# preview() and compare the DOM after every step with a full render of that prefix.
STREAM_AND_COMPARE = """async (docs) => {
  const md = await import('/markdown.js');
  const mismatches = [];
  for (const [name, text, step] of docs) {
    const streamed = document.createElement('div'), full = document.createElement('div');
    for (let end = Math.min(step, text.length); ; end = Math.min(end + step, text.length)) {
      const prefix = text.slice(0, end);
      md.preview(prefix, streamed);
      md.render(prefix, full);
      if (!streamed.isEqualNode(full)) {
        mismatches.push({name, end, streamed: streamed.innerHTML, full: full.innerHTML});
        break;
      }
      if (end === text.length) break;
    }
  }
  return mismatches;
}"""

# Texts where a later line changes how earlier lines render.
TRICKY = {
    "late reference definition": "See [the guide] and [docs][d].\n\n- a\n- b\n\n"
                                 "Para.\n\n[the guide]: https://example.com/g\n"
                                 "[d]: https://example.com/d \"Docs\"\n",
    "list turns loose": "1. a\n2. b\n\n3. c\n\nafter\n",
    "setext heading": "Title\nline two\n=====\n\nnext\n---\n",
    "table forms": "a | b\n--|--\n1 | 2\n\ntext\n",
    "unclosed fence": "before\n\n```js\nlet a = 1;\n\nlet b = 2;\n",
    "lazy quote": "> quoted\nlazy line\n\n> again\n\nout\n",
    "list after paragraph": "para\n- item\n\n  more\n- item two\n\n    code\n",
    "numbered in text": "I have\n2. things\n\n1. real\n",
    "emphasis across lines": "**bold\nstill bold** and *em\n\nnot em*\n",
    "windows newlines": "# Head\r\n\r\n- a\r\n- b\r\n\r\ntext\r\n",
    "too deep": "> " * 150 + "deep\n\nafter\n",
}


def test_streamed_previews_always_equal_a_full_render(page: Page, app_server: str) -> None:
    commonmark.open_blank(page, app_server)
    docs = [["spec %d" % e["example"], e["markdown"], 1] for e in commonmark.load_examples()]
    docs += [[name, text, 1] for name, text in TRICKY.items()]
    docs += [["sections", long_answer(8_000), 16], ["nested list", nested_list(8_000), 16]]
    assert page.evaluate(STREAM_AND_COMPARE, docs) == []


def test_streaming_keeps_the_finished_blocks(page: Page, app_server: str) -> None:
    """Only the blocks that can still change are rebuilt: over a whole 40 KB answer
    streamed in 16-character chunks, the page makes about as many nodes as the answer
    has, not one full answer per chunk."""
    commonmark.open_blank(page, app_server)
    counts = page.evaluate("""async (text) => {
      const md = await import('/markdown.js');
      const node = document.createElement('div');
      let made = 0;
      const count = (records) => { for (const r of records) made += r.addedNodes.length; };
      const observer = new MutationObserver(count);
      observer.observe(node, {childList: true, subtree: true});
      md.preview(text.slice(0, 4000), node);
      const first = node.firstElementChild;
      for (let end = 4016; end < text.length; end += 16) md.preview(text.slice(0, end), node);
      md.preview(text, node);
      count(observer.takeRecords());
      const full = document.createElement('div');
      md.render(text, full);
      return {made, final: full.getElementsByTagName('*').length + full.childNodes.length,
              kept: node.firstElementChild === first, equal: node.isEqualNode(full),
              chunks: Math.ceil((text.length - 4000) / 16)};
    }""", long_answer(40_000))
    assert counts["equal"] and counts["kept"]
    # A full rebuild per chunk would make chunks x (final / 2) nodes.
    assert counts["made"] < 4 * counts["final"], counts


LINKS = """[web](https://example.com/a?b=1 "Title") [plain](http://example.org)
[mail](mailto:someone@example.com) <https://auto.example/x> and https://bare.example/y.
someone@example.com, but main.py and www.example.com stay text.
[js](javascript:alert(1)) [JS](JaVaScRiPt:alert(1)) [data](data:text/html,hi)
[vb](vbscript:msgbox(1)) [file](file:///etc/passwd) [rel](/relative) [proto](//evil.example/p)
[ftp](ftp://files.example/f) <javascript:alert(1)>
![a cat](https://img.example/cat.png) ![inline](data:image/png;base64,AAAA)

[ref]: javascript:alert(1)
[ref] and <b>raw</b> <img src=x onerror=alert(1)>
"""


def test_links_images_and_raw_html(page: Page, app_server: str) -> None:
    commonmark.open_blank(page, app_server)
    out = page.evaluate("""async (text) => {
      const md = await import('/markdown.js');
      const node = document.createElement('div');
      md.render(text, node);
      return {links: [...node.querySelectorAll('a')].map((a) => ({
                text: a.textContent, href: a.getAttribute('href'), rel: a.getAttribute('rel'),
                target: a.getAttribute('target'), title: a.getAttribute('title'),
                image: a.classList.contains('md-image')})),
              tags: [...new Set([...node.querySelectorAll('*')].map((e) => e.localName))],
              text: node.textContent};
    }""", LINKS)
    assert [(a["text"], a["href"]) for a in out["links"]] == [
        ("web", "https://example.com/a?b=1"), ("plain", "http://example.org"),
        ("mail", "mailto:someone@example.com"),
        ("https://auto.example/x", "https://auto.example/x"),
        ("https://bare.example/y", "https://bare.example/y"),
        ("someone@example.com", "mailto:someone@example.com"),
        ("a cat", "https://img.example/cat.png")]
    assert all(a["rel"] == "noopener noreferrer" and a["target"] == "_blank"
               for a in out["links"])
    assert out["links"][0]["title"] == "Title"
    assert [a["image"] for a in out["links"]] == [False] * 6 + [True]
    assert set(out["tags"]) <= {"p", "a", "br"}
    for literal in ("[js](javascript:alert(1))", "[JS](JaVaScRiPt:alert(1))",
                    "[data](data:text/html,hi)", "[vb](vbscript:msgbox(1))",
                    "[file](file:///etc/passwd)", "[rel](/relative)",
                    "[proto](//evil.example/p)", "[ftp](ftp://files.example/f)",
                    "<javascript:alert(1)>", "inline", "[ref]: javascript:alert(1)",
                    "<b>raw</b> <img src=x onerror=alert(1)>", "main.py", "www.example.com"):
        assert literal in out["text"], literal


# Markdown-shaped attempts at script or markup; none may make an element other than
# those Markdown makes, an attribute other than ours, or a link other than http(s)/mailto.
XSS = [
    "<script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "<svg/onload=window.__pwned=1>",
    '<iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>',
    "<a href=\"javascript:window.__pwned=1\">x</a>",
    "[x](javascript:window.__pwned=1)",
    "[x](java\tscript:window.__pwned=1)",
    "[x](&#106;avascript:window.__pwned=1)",
    "[x](javascript&colon;window.__pwned=1)",
    "[x](<javascript:window.__pwned=1>)",
    "[x](data:text/html;base64,PHNjcmlwdD5wYXJlbnQuX19wd25lZD0xPC9zY3JpcHQ+)",
    "![x](javascript:window.__pwned=1)",
    '![x" onerror="window.__pwned=1](https://a.example/i.png)',
    '[x](https://a.example/ "t\\" onmouseover=\\"window.__pwned=1")',
    '<https://a.example/"onmouseover="window.__pwned=1>',
    "[x]: javascript:window.__pwned=1\n\n[x]",
    '```"><img src=x onerror=window.__pwned=1>\ncode\n```',
    '```js onerror="window.__pwned=1"\ncode\n```',
    "| <img src=x onerror=window.__pwned=1> |\n|---|\n| <script>window.__pwned=1</script> |",
    "> <style>*{display:none}</style>\n> <base href=//evil.example/>",
    "- <form action=//evil.example><button>x</button></form>",
    "&lt;script&gt;window.__pwned=1&lt;/script&gt; &#60;img src=x onerror=window.__pwned=1&#62;",
    "`<script>window.__pwned=1</script>`",
    "**<img src=x onerror=window.__pwned=1>**",
    "<!-- --><script>window.__pwned=1</script>",
    "<details open ontoggle=window.__pwned=1>",
    "[x](https://a.example/\u0000javascript:window.__pwned=1)",
    "https://a.example/<script>window.__pwned=1</script>",
]


def test_markup_in_markdown_stays_inert(page: Page, app_server: str) -> None:
    commonmark.open_blank(page, app_server)
    problems = page.evaluate("""async (payloads) => {
      const md = await import('/markdown.js');
      const allowed = {a: ['href', 'rel', 'target', 'title', 'class'], ol: ['start'],
        pre: ['class', 'data-lang'], code: ['class'], th: ['data-align'], td: ['data-align'],
        p: ['class'], h3: ['class'], h4: ['class'], h5: ['class'], h6: ['class']};
      const tags = new Set(%s);
      const problems = [];
      const check = (node, how, payload) => {
        for (const el of node.querySelectorAll('*')) {
          if (!tags.has(el.localName)) problems.push([how, payload, el.localName]);
          for (const name of el.getAttributeNames()) {
            if (!(allowed[el.localName] || []).includes(name)) problems.push([how, payload, el.localName + ' ' + name]);
          }
          if (el.localName === 'a' && !/^(https?:|mailto:)/i.test(el.getAttribute('href'))) {
            problems.push([how, payload, 'href ' + el.getAttribute('href')]);
          }
        }
      };
      for (const payload of payloads) {
        const full = document.createElement('div');
        document.body.append(full);
        md.render(payload, full);
        check(full, 'render', payload);
        const streamed = document.createElement('div');
        document.body.append(streamed);
        for (let end = 1; end <= payload.length; end++) md.preview(payload.slice(0, end), streamed);
        check(streamed, 'preview', payload);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (window.__pwned !== undefined) problems.push(['executed']);
      return problems;
    }""" % sorted(MADE_BY_MARKDOWN), XSS)
    assert problems == []


# Inputs made to be slow or deep for a parser; each renders in bounded time and keeps
# its text (too deep to build: shown as written).
HOSTILE = {
    "open brackets": "[" * 20_000 + "](" * 5_000,
    "unclosed links": "[a](" * 10_000,
    "unclosed emphasis": "*a " * 20_000,
    "emphasis runs": "**" * 20_000,
    "backticks": "`" * 20_000 + "a`b``c" * 3_000,
    "angle URLs": "<https://" * 20_000,
    "mixed": "*_[`<h" * 10_000,
    "backslashes": "\\" * 50_000,
    "deep quotes": "> " * 5_000 + "deep",
    "deep list": "\n".join("  " * n + "- item %d" % n for n in range(300)),
    "deep emphasis": "*a " * 3_000 + "core" + " a*" * 3_000,
}


def test_hostile_input_renders_whole_and_in_bounded_time(page: Page, app_server: str) -> None:
    commonmark.open_blank(page, app_server)
    out = page.evaluate("""async (inputs) => {
      const md = await import('/markdown.js');
      const result = {};
      for (const [name, text] of Object.entries(inputs)) {
        const node = document.createElement('div');
        const started = performance.now();
        md.render(text, node);
        result[name] = {ms: performance.now() - started, text: node.textContent,
                        plain: node.querySelector('.md-plain') !== null};
      }
      return result;
    }""", HOSTILE)
    assert out["deep quotes"]["plain"] and out["deep quotes"]["text"].endswith("deep")
    assert out["deep list"]["plain"] and "item 299" in out["deep list"]["text"]
    assert "core" in out["deep emphasis"]["text"]
    assert not out["mixed"]["plain"]
    # Generous: a guard against blow-ups (quadratic or worse), not a benchmark.
    slow = {name: round(o["ms"]) for name, o in out.items() if o["ms"] > 5_000}
    assert slow == {}
