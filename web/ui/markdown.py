# A small, safe Markdown renderer for the agent's answers.
#
# parse(text) turns Markdown into plain tuples (no DOM, no pyscript: the parsing runs
# and can be tested in CPython as well as MicroPython); render(text, parent) builds DOM
# nodes from them with createElement and textContent only. Nothing is ever parsed as
# HTML: raw HTML in the text stays text, and links are made only for http(s) URLs
# (anything else, such as javascript: or data:, stays literal text).
#
# Supported: paragraphs (a newline is a line break), # headings, **bold**, *italic*,
# ~~strikethrough~~, `inline code`, fenced code blocks (``` or ~~~), bullet and numbered
# lists (nested by indentation), > quotes, --- rules, simple | tables, [links](https://…),
# <https://…> and bare https:// URLs, and backslash escapes.
#
# Blocks:  ("p", inlines) ("h", level, inlines) ("code", lang, text) ("hr",)
#          ("ul", [item_blocks, ...]) ("ol", start, [item_blocks, ...]) ("quote", blocks)
#          ("table", aligns, header_cells, rows)   cells are inline lists
# Inlines: ("text", s) ("br",) ("strong", inlines) ("em", inlines) ("del", inlines)
#          ("code", s) ("link", href, inlines)
#
# The parser works on lists of characters (MicroPython indexes str in O(n)) and keeps
# every search bounded, so a hostile or half-streamed answer cannot make it slow.

MAX_DEPTH = 8            # nesting of lists/quotes and of emphasis
MAX_LABEL = 500          # characters searched for a link's closing bracket
MAX_URL = 2000           # characters searched for a link's closing parenthesis
ESCAPABLE = "\\`*_{}[]()#+-.!|~<>\"'"
URL_STOP = " \t\n<>\"`"
URL_TRAIL = ".,:;!?'*_~"


# ------------------------------------------------------------------ helpers

def _alnum(ch):
    return ch.isalpha() or ch.isdigit()


def _space(ch):
    return ch in " \t\n"


def _indent(line):
    n = 0
    for ch in line:
        if ch != " ":
            break
        n += 1
    return n


def safe_url(url):
    """``url`` itself if it is an absolute http(s) URL that can be linked, else None."""
    url = url.strip()
    low = url.lower()
    if not (low.startswith("http://") or low.startswith("https://")):
        return None
    if len(url) <= len("https://") or len(url) > MAX_URL:
        return None
    for ch in url:
        if ord(ch) < 33 or ch in "<>\"`\\":
            return None
    return url


# ------------------------------------------------------------------ blocks

def _fence(line):
    """(char, length, info) when ``line`` opens a code fence, else None."""
    ind = _indent(line)
    if ind > 3:
        return None
    rest = line[ind:]
    if not rest:
        return None
    ch = rest[0]
    if ch not in "`~":
        return None
    n = 0
    for c in rest:
        if c != ch:
            break
        n += 1
    if n < 3:
        return None
    info = rest[n:].strip()
    if ch == "`" and "`" in info:
        return None
    return ch, n, info


def _heading(line):
    ind = _indent(line)
    if ind > 3:
        return None
    rest = line[ind:]
    level = 0
    for c in rest:
        if c != "#":
            break
        level += 1
    if level < 1 or level > 6:
        return None
    body = rest[level:]
    if body and body[0] not in " \t":
        return None
    body = body.strip()
    # An optional closing run of #s.
    stripped = body.rstrip("#")
    if stripped != body and (not stripped or stripped[-1] == " "):
        body = stripped.strip()
    return level, body


def _rule(line):
    text = line.strip()
    if len(text) < 3 or _indent(line) > 3:
        return False
    ch = text[0]
    if ch not in "-*_":
        return False
    count = 0
    for c in text:
        if c == ch:
            count += 1
        elif c != " ":
            return False
    return count >= 3


def _marker(line):
    """(kind, indent, content_offset, number) when ``line`` starts a list item.
    kind is the bullet character or "." / ")" for numbered items."""
    ind = _indent(line)
    rest = line[ind:]
    if not rest:
        return None
    ch = rest[0]
    if ch in "-*+":
        if len(rest) == 1:
            return ch, ind, ind + 1, 0
        if rest[1] in " \t":
            pad = _indent(rest[1:])
            if pad > 4 or pad == len(rest) - 1:
                pad = 1
            return ch, ind, ind + 1 + pad, 0
        return None
    digits = 0
    for c in rest:
        if not c.isdigit():
            break
        digits += 1
    if digits < 1 or digits > 9 or digits >= len(rest):
        return None
    delim = rest[digits]
    if delim not in ".)":
        return None
    after = rest[digits + 1:]
    if after and after[0] not in " \t":
        return None
    pad = _indent(after) if after else 1
    if pad > 4 or pad == 0 or pad == len(after):
        pad = 1
    return delim, ind, ind + digits + 1 + pad, int(rest[:digits])


def _quote(line):
    ind = _indent(line)
    return ind <= 3 and line[ind:ind + 1] == ">"


def _unquote(line):
    rest = line[_indent(line) + 1:]
    return rest[1:] if rest[:1] == " " else rest


def _table_cells(line):
    """The cells of a table row (None when the line has no pipe)."""
    text = line.strip()
    if "|" not in text:
        return None
    cells, cell, i = [], [], 0
    chars = list(text)
    while i < len(chars):
        ch = chars[i]
        if ch == "\\" and i + 1 < len(chars) and chars[i + 1] == "|":
            cell.append("|")
            i += 2
            continue
        if ch == "|":
            cells.append("".join(cell).strip())
            cell = []
        else:
            cell.append(ch)
        i += 1
    cells.append("".join(cell).strip())
    if text[0] == "|":
        cells = cells[1:]
    if text[-1] == "|" and len(text) > 1 and cells:
        cells = cells[:-1]
    return cells


def _table_aligns(line):
    cells = _table_cells(line)
    if not cells:
        return None
    aligns = []
    for cell in cells:
        body = cell.strip(":")
        if not body or body.strip("-"):
            return None
        left, right = cell[0] == ":", cell[-1] == ":"
        aligns.append("center" if left and right else "right" if right else
                      "left" if left else "")
    return aligns


def _starts_block(line):
    """Does ``line`` interrupt a paragraph?"""
    if _fence(line) or _heading(line) or _rule(line) or _quote(line):
        return True
    found = _marker(line)
    if found is None:
        return False
    kind, ind, offset, number = found
    if offset >= len(line.rstrip()):
        return False          # an empty item does not interrupt a paragraph
    return kind in "-*+" or number == 1


def parse(text, depth=0):
    """Markdown ``text`` as a list of blocks (see the top of this module)."""
    text = str(text).replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    return _blocks(text.split("\n"), depth)


def _blocks(lines, depth):
    blocks = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        fence = _fence(line)
        if fence:
            ch, size, info = fence
            ind = _indent(line)
            body = []
            i += 1
            while i < n:
                close = _fence(lines[i])
                if close and close[0] == ch and close[1] >= size and not close[2]:
                    i += 1
                    break
                row = lines[i]
                body.append(row[min(ind, _indent(row)):])
                i += 1
            lang = info.split(" ")[0] if info else ""
            blocks.append(("code", lang, "\n".join(body)))
            continue
        heading = _heading(line)
        if heading:
            blocks.append(("h", heading[0], parse_inline(heading[1], depth)))
            i += 1
            continue
        if _rule(line):
            blocks.append(("hr",))
            i += 1
            continue
        if _quote(line):
            body = []
            while i < n and lines[i].strip():
                if _quote(lines[i]):
                    body.append(_unquote(lines[i]))
                elif body and not _starts_block(lines[i]):
                    body.append(lines[i])         # a lazy continuation line
                else:
                    break
                i += 1
            if depth >= MAX_DEPTH:
                blocks.append(("p", parse_inline("\n".join(body), depth)))
            else:
                blocks.append(("quote", _blocks(body, depth + 1)))
            continue
        if _marker(line) and depth < MAX_DEPTH:
            block, i = _list(lines, i, depth)
            blocks.append(block)
            continue
        if i + 1 < n and "|" in line:
            aligns = _table_aligns(lines[i + 1])
            header = _table_cells(line)
            if aligns and header and len(header) == len(aligns):
                i += 2
                rows = []
                while i < n and lines[i].strip() and "|" in lines[i]:
                    cells = _table_cells(lines[i])
                    cells = (cells + [""] * len(aligns))[:len(aligns)]
                    rows.append([parse_inline(c, depth) for c in cells])
                    i += 1
                blocks.append(("table", aligns, [parse_inline(c, depth) for c in header], rows))
                continue
        body = [line.strip()]
        i += 1
        while i < n and lines[i].strip() and not _starts_block(lines[i]):
            body.append(lines[i].strip())
            i += 1
        blocks.append(("p", parse_inline("\n".join(body), depth)))
    return blocks


def _list(lines, i, depth):
    kind, base, offset, number = _marker(lines[i])
    items = []
    n = len(lines)
    while i < n:
        found = _marker(lines[i])
        if found is None or found[0] != kind or found[1] > base + 1 and items:
            break
        offset = found[2]
        first = lines[i][offset:] if offset < len(lines[i]) else ""
        body = [first]
        i += 1
        while i < n:
            line = lines[i]
            if not line.strip():
                j = i
                while j < n and not lines[j].strip():
                    j += 1
                if j < n and _indent(lines[j]) >= offset:
                    body.extend([""] * (j - i))
                    i = j
                    continue
                break
            ind = _indent(line)
            if ind >= offset:
                body.append(line[offset:])
            elif _marker(line):
                if ind <= base:
                    break
                body.append(line[min(ind, offset):])   # a nested list, indented a little
            elif _starts_block(line) and ind < offset:
                break
            else:
                body.append(line.strip())              # a lazy continuation line
            i += 1
        items.append(_blocks(body, depth + 1))
        # Blank lines between items of the same list.
        j = i
        while j < n and not lines[j].strip():
            j += 1
        if j > i and j < n:
            nxt = _marker(lines[j])
            if nxt and nxt[0] == kind and nxt[1] <= base + 1:
                i = j
                continue
    if kind in ".)":
        return ("ol", number, items), i
    return ("ul", items), i


# ------------------------------------------------------------------ inlines

def parse_inline(text, depth=0):
    """The inline Markdown of one block as a list of inline nodes."""
    chars = list(text)
    return _Inline(chars).run(0, len(chars), depth, True)


class _Inline:
    def __init__(self, chars):
        self.c = chars
        self.failed = {}     # (delimiter, end) -> first position known to have no closer
        self.closing = None  # "[" or "(" index -> index of its match

    def run(self, start, end, depth, links):
        c = self.c
        out, buf = [], []
        i = start

        def flush():
            if buf:
                out.append(("text", "".join(buf)))
                buf.clear()

        while i < end:
            ch = c[i]
            if ch == "\\" and i + 1 < end and c[i + 1] in ESCAPABLE:
                buf.append(c[i + 1])
                i += 2
                continue
            if ch == "\n":
                flush()
                out.append(("br",))
                i += 1
                continue
            if ch == "`":
                run = self.run_length(i, end, "`")
                close = self.find_code_close(i + run, end, run)
                if close < 0:
                    buf.extend(c[i:i + run])
                    i += run
                    continue
                code = "".join(c[i + run:close]).replace("\n", " ")
                if len(code) > 2 and code[0] == " " and code[-1] == " " and code.strip():
                    code = code[1:-1]
                flush()
                out.append(("code", code))
                i = close + run
                continue
            if ch in "*_~" and depth < MAX_DEPTH:
                done = self.emphasis(i, end, depth, links)
                if done:
                    flush()
                    node, i = done
                    out.append(node)
                    continue
                run = self.run_length(i, end, ch)
                buf.extend(c[i:i + run])
                i += run
                continue
            if ch == "[" and links:
                done = self.link(i, end, depth)
                if done:
                    node, i = done
                    if node[0] == "text":
                        buf.append(node[1])
                    else:
                        flush()
                        out.append(node)
                    continue
            if ch == "<" and links:
                done = self.angle_link(i, end)
                if done:
                    flush()
                    node, i = done
                    out.append(node)
                    continue
            if ch in "hH" and links and (i == start or not _alnum(c[i - 1])):
                done = self.bare_link(i, end)
                if done:
                    flush()
                    node, i = done
                    out.append(node)
                    continue
            buf.append(ch)
            i += 1
        flush()
        return out

    def run_length(self, i, end, ch):
        n = 0
        while i + n < end and self.c[i + n] == ch:
            n += 1
        return n

    def find_code_close(self, i, end, run):
        key = ("`" * run, end)
        if self.failed.get(key, end + 1) <= i:
            return -1
        c = self.c
        j = i
        while j < end:
            if c[j] == "`":
                length = self.run_length(j, end, "`")
                if length == run:
                    return j
                j += length
            else:
                j += 1
        self.failed[key] = min(self.failed.get(key, end + 1), i)
        return -1

    def emphasis(self, i, end, depth, links):
        """(node, next index) for emphasis opening at ``i``, or None."""
        c = self.c
        ch = c[i]
        run = self.run_length(i, end, ch)
        if ch == "~":
            if run != 2:
                return None
            size = 2
        else:
            size = 3 if run >= 3 else run
        after = i + size
        if after >= end or _space(c[after]):
            return None
        if ch == "_" and i > 0 and _alnum(c[i - 1]):
            return None       # snake_case words are not emphasis
        while size > 0:
            close = self.find_close(after, end, ch, size)
            if close > after:
                inner = self.run(after, close, depth + 1, links)
                if size == 3:
                    node = ("strong", [("em", inner)])
                elif ch == "~":
                    node = ("del", inner)
                else:
                    node = ("strong" if size == 2 else "em", inner)
                return node, close + size
            if ch == "~":
                return None
            size -= 1
            after = i + size
        return None

    def find_close(self, i, end, ch, size):
        """Index of a closing run of exactly ``size`` ``ch`` after ``i`` (or -1)."""
        key = (ch * size, end)
        if self.failed.get(key, end + 1) <= i:
            return -1
        c = self.c
        j = i
        while j < end:
            x = c[j]
            if x == "\\":
                j += 2
                continue
            if x == "`":
                length = self.run_length(j, end, "`")
                close = self.find_code_close(j + length, end, length)
                j = close + length if close >= 0 else j + length
                continue
            if x == ch:
                length = self.run_length(j, end, ch)
                if length == size and not _space(c[j - 1]) and \
                        not (ch == "_" and j + length < end and _alnum(c[j + length])):
                    return j
                j += length
                continue
            j += 1
        self.failed[key] = min(self.failed.get(key, end + 1), i)
        return -1

    def brackets(self):
        """Index of the "]" or ")" matching each "[" or "(" (one pass, done once)."""
        if self.closing is None:
            self.closing = {}
            squares, rounds, c, j, n = [], [], self.c, 0, len(self.c)
            while j < n:
                x = c[j]
                if x == "\\":
                    j += 2
                    continue
                if x == "[":
                    squares.append(j)
                elif x == "]" and squares:
                    self.closing[squares.pop()] = j
                elif x == "(":
                    rounds.append(j)
                elif x == ")" and rounds:
                    self.closing[rounds.pop()] = j
                j += 1
        return self.closing

    def link(self, i, end, depth):
        """[label](url): (("link", href, inlines) or ("text", source), next) or None."""
        c = self.c
        label_end = self.brackets().get(i, -1)
        if label_end < 0 or label_end >= end or label_end - i > MAX_LABEL:
            return None
        if label_end + 1 >= end or c[label_end + 1] != "(":
            return None
        k = self.brackets().get(label_end + 1, -1)
        if k < 0 or k >= end or k - label_end > MAX_URL:
            return None
        target = "".join(c[label_end + 2:k]).strip()
        if "\n" in target:
            return None
        if target[:1] == "<" and ">" in target:
            target = target[1:target.find(">")]
        else:
            target = target.split(" ")[0]     # drop an optional "title"
        href = safe_url(target)
        if href is None:
            return ("text", "".join(c[i:k + 1])), k + 1
        return ("link", href, self.run(i + 1, label_end, depth + 1, False)), k + 1

    def angle_link(self, i, end):
        c = self.c
        j, limit = i + 1, min(end, i + MAX_URL)
        while j < limit and c[j] not in " \n<>":
            j += 1
        if j >= limit or c[j] != ">":
            return None
        href = safe_url("".join(c[i + 1:j]))
        if href is None:
            return None
        return ("link", href, [("text", href)]), j + 1

    def bare_link(self, i, end):
        c = self.c
        head = "".join(c[i:min(end, i + 8)]).lower()
        if not (head.startswith("http://") or head.startswith("https://")):
            return None
        j, limit = i, min(end, i + MAX_URL)
        while j < limit and c[j] not in URL_STOP:
            j += 1
        # Leave trailing punctuation (and an unbalanced closing parenthesis) outside.
        while j > i:
            last = c[j - 1]
            if last in URL_TRAIL:
                j -= 1
            elif last == ")" and c[i:j].count("(") < c[i:j].count(")"):
                j -= 1
            else:
                break
        href = safe_url("".join(c[i:j]))
        if href is None:
            return None
        return ("link", href, [("text", href)]), j


def plain_text(blocks):
    """The text of parsed blocks without markup, one line per block or item (for screen
    reader announcements and the like)."""
    lines = []
    for block in blocks:
        kind = block[0]
        if kind == "p":
            lines.append(_plain(block[1]))
        elif kind == "h":
            lines.append(_plain(block[2]))
        elif kind == "code":
            lines.append(block[2])
        elif kind in ("ul", "ol"):
            for item in block[-1]:
                lines.append(plain_text(item))
        elif kind == "quote":
            lines.append(plain_text(block[1]))
        elif kind == "table":
            for row in [block[2]] + block[3]:
                lines.append(", ".join(_plain(cell) for cell in row))
    return "\n".join(line for line in lines if line)


def _plain(inlines):
    parts = []
    for node in inlines:
        kind = node[0]
        if kind in ("text", "code"):
            parts.append(node[1])
        elif kind == "br":
            parts.append("\n")
        elif kind == "link":
            parts.append(_plain(node[2]))
        else:
            parts.append(_plain(node[1]))
    return "".join(parts)


# ------------------------------------------------------------------ DOM

_DOM = []


def _dom():
    """ui.dom, imported on first render (parsing needs no browser)."""
    if not _DOM:
        from ui import dom
        _DOM.append(dom)
    return _DOM[0]


def render(text, parent):
    """Replace ``parent``'s children with the rendered Markdown of ``text``; returns
    the parsed blocks."""
    blocks = parse(text)
    fragment = _dom().document.createDocumentFragment()
    _render_blocks(blocks, fragment)
    parent.replaceChildren(fragment)
    return blocks


def _render_blocks(blocks, parent, tight=False):
    # A newline between blocks (and after each <br>) is invisible under white-space:
    # normal but keeps the element's textContent readable as plain text.
    document = _dom().document
    for index, block in enumerate(blocks):
        if index:
            parent.append(document.createTextNode("\n"))
        if tight and index == 0 and block[0] == "p":
            _render_inlines(block[1], parent)      # a tight list item: no <p>
        else:
            _render_block(block, parent)


def _render_block(block, parent):
    make = _dom().make
    kind = block[0]
    if kind == "p":
        _render_inlines(block[1], make("p", parent=parent))
    elif kind == "h":
        _render_inlines(block[2], make("h%d" % min(block[1] + 2, 6), "md-heading",
                                       parent=parent))
    elif kind == "code":
        pre = make("pre", "md-code", parent=parent)
        code = make("code", text=block[2], parent=pre)
        lang = "".join(ch for ch in block[1][:30] if _alnum(ch) or ch in "+-_#.")
        if lang:
            pre.setAttribute("data-lang", lang)
            code.className = "language-" + lang
    elif kind == "hr":
        make("hr", parent=parent)
    elif kind == "quote":
        _render_blocks(block[1], make("blockquote", parent=parent))
    elif kind in ("ul", "ol"):
        node = make(kind, parent=parent)
        if kind == "ol" and block[1] != 1:
            node.setAttribute("start", str(block[1]))
        for item in block[-1]:
            _render_blocks(item, make("li", parent=node), tight=True)
    elif kind == "table":
        wrap = make("div", "md-table", parent=parent)
        table = make("table", parent=wrap)
        aligns = block[1]
        row = make("tr", parent=make("thead", parent=table))
        for index, cell in enumerate(block[2]):
            _cell(make("th", attrs={"scope": "col"}, parent=row), cell, aligns[index])
        body = make("tbody", parent=table)
        for cells in block[3]:
            row = make("tr", parent=body)
            for index, cell in enumerate(cells):
                _cell(make("td", parent=row), cell, aligns[index])


def _cell(node, inlines, align):
    if align:
        node.setAttribute("data-align", align)
    _render_inlines(inlines, node)


def _render_inlines(inlines, parent):
    document, make = _dom().document, _dom().make
    for node in inlines:
        kind = node[0]
        if kind == "text":
            parent.append(document.createTextNode(node[1]))
        elif kind == "br":
            make("br", parent=parent)
            parent.append(document.createTextNode("\n"))
        elif kind == "code":
            make("code", text=node[1], parent=parent)
        elif kind == "link":
            link = make("a", attrs={"href": node[1], "rel": "noopener noreferrer",
                                    "target": "_blank"}, parent=parent)
            _render_inlines(node[2], link)
        else:   # strong, em, del
            _render_inlines(node[1], make(kind, parent=parent))
