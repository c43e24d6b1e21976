/*
 * The page reader: what the extension runs inside the tab the user reads (injected with
 * chrome.scripting.executeScript, after the vendored Readability.js, into the
 * extension's isolated world: the page's own scripts cannot see or change it).
 *
 * It only reads, and reads only what the user can see:
 *   extract({maxChars})  the page's main text as Firefox's reader view finds it
 *                        (Readability), as blocks (headings, paragraphs, list items,
 *                        table rows kept as rows), with its title and URL. Text the user
 *                        cannot see (display:none, visibility:hidden, opacity 0, off-screen,
 *                        tiny, transparent) is dropped before Readability sees the page;
 *                        frames are not read (a note says how many were skipped); past
 *                        maxChars the text is cut and the result says so.
 *   selection()          the text the user selected (in the page or in a text field).
 *   links({max})         the visible links: text and absolute URL.
 *   images({max})        the visible pictures: alt text (or title), absolute URL, size.
 *   imageData({index})   one of them read as this page may read it (its own site's, or one
 *                        whose server allows it): {data (base64), type, alt, url}, or
 *                        {unreadable: why}.
 *   show(quote)          scroll to the first visible place that says `quote` and
 *                        highlight it (the CSS Custom Highlight API: the page's DOM is
 *                        not touched); {found}.
 *
 * Nothing here is sent anywhere: the result goes back to the extension's side panel.
 */
(() => {
  if (globalThis.pyAgentPageReader) return;

  const HEADINGS = new Set(['H1', 'H2', 'H3', 'H4', 'H5', 'H6']);
  const SKIPPED = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'CANVAS',
                           'IFRAME', 'FRAME', 'OBJECT', 'EMBED', 'HEAD', 'BUTTON', 'SELECT',
                           'INPUT', 'TEXTAREA']);
  const BLOCKS = new Set(['ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'DETAILS', 'DIV', 'DL',
                          'DD', 'DT', 'FIELDSET', 'FIGCAPTION', 'FIGURE', 'FOOTER', 'FORM',
                          'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HEADER', 'HR', 'LI', 'MAIN',
                          'NAV', 'OL', 'P', 'PRE', 'SECTION', 'TABLE', 'UL', 'SUMMARY',
                          'CAPTION', 'TR', 'TBODY', 'THEAD', 'TFOOT']);
  // A page with more elements or text than this skips Readability (which walks the page
  // several times: 10 s for 5 MB of text) and reads the whole visible page: on such pages
  // the boilerplate is a small share, and the tab stays responsive.
  const READABILITY_MAX_ELEMENTS = 15000;
  const READABILITY_MAX_CHARS = 300000;
  const TINY_FONT_PX = 4;
  const HIGHLIGHT = 'py-agent-quote';

  const squash = (text) => text.replace(/\s+/g, ' ').trim();

  // ------------------------------------------------------------ what the user can see

  /** Why `el` (of the live page) is not seen by the user, or '' if it may be. */
  function hiddenReason(el, view) {
    if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true,
                             opacityProperty: true, visibilityProperty: true})) {
      return 'hidden';
    }
    const style = view.getComputedStyle(el);
    const rect = el.getBoundingClientRect();
    const left = rect.left + view.scrollX, top = rect.top + view.scrollY;
    if (rect.width > 0 || rect.height > 0) {
      if (left + rect.width <= 0 || top + rect.height <= 0) return 'off-screen';
      const width = document.documentElement.scrollWidth;
      if (style.position !== 'static' && left >= width + 100) return 'off-screen';
    }
    const clipped = style.overflow === 'hidden' || style.overflow === 'clip' ||
                    style.clip === 'rect(0px, 0px, 0px, 0px)' ||
                    style.clipPath === 'inset(50%)';
    if (clipped && (rect.width <= 1 || rect.height <= 1)) return 'tiny';
    if (parseFloat(style.fontSize) < TINY_FONT_PX && el.childElementCount === 0 &&
        el.textContent.trim()) return 'tiny';
    if (/^rgba\(.*,\s*0\)$/.test(style.color) || style.color === 'transparent') {
      if (el.childElementCount === 0 && el.textContent.trim()) return 'transparent';
    }
    return '';
  }

  /**
   * A copy of the page without what the user cannot see: the live page and its copy are
   * walked side by side (they have the same shape right after cloneNode), and each copied
   * element whose original is hidden is removed with all it holds.
   */
  function visibleCopy() {
    const view = document.defaultView;
    const copy = document.cloneNode(true);
    const dropped = {hidden: 0, 'off-screen': 0, tiny: 0, transparent: 0};
    let frames = 0, elements = 0;
    if (!document.body || !copy.body) return {copy, dropped, frames, elements};
    const live = document.createTreeWalker(document.body, NodeFilter.SHOW_ELEMENT);
    const copied = copy.createTreeWalker(copy.body, NodeFilter.SHOW_ELEMENT);
    const doomed = [];
    let node = live.nextNode(), twin = copied.nextNode();
    while (node && twin) {
      elements += 1;
      const tag = node.tagName.toUpperCase();
      let skip = false;
      if (tag === 'IFRAME' || tag === 'FRAME') {
        if (node.checkVisibility()) frames += 1;
        skip = true;
        doomed.push(twin);
      } else if (SKIPPED.has(tag)) {
        skip = true;
        doomed.push(twin);
      } else {
        const reason = hiddenReason(node, view);
        if (reason) {
          dropped[reason] += 1;
          skip = true;
          doomed.push(twin);
        }
      }
      if (skip) {
        // Past the subtree, in both trees.
        node = nextOutside(live); twin = nextOutside(copied);
      } else {
        node = live.nextNode(); twin = copied.nextNode();
      }
    }
    for (const el of doomed) el.remove();
    return {copy, dropped, frames, elements};
  }

  function nextOutside(walker) {
    let next = walker.nextSibling();
    while (!next) {
      if (!walker.parentNode()) return null;
      next = walker.nextSibling();
    }
    return next;
  }

  // ------------------------------------------------------------ the text as blocks

  /** The blocks of `root` (of the visible copy): {kind, text, level?}, until they hold
   * more than `maxChars` characters. */
  function blocksOf(root, maxChars = Infinity) {
    const blocks = [];
    const inline = [];
    let size = 0;
    const flush = () => {
      const text = squash(inline.join(''));
      inline.length = 0;
      if (text) blocks.push({kind: 'text', text});
    };
    const visit = (node, depth) => {
      if (size > maxChars) return;
      if (node.nodeType === Node.TEXT_NODE) { inline.push(node.data); return; }
      if (node.nodeType !== Node.ELEMENT_NODE) return;
      const tag = node.tagName.toUpperCase();
      if (SKIPPED.has(tag)) return;
      if (tag === 'BR') { inline.push('\n'); return; }
      if (!BLOCKS.has(tag)) { for (const child of node.childNodes) visit(child, depth); return; }
      flush();
      const before = blocks.length;
      if (HEADINGS.has(tag)) {
        const text = squash(node.textContent);
        if (text) blocks.push({kind: 'heading', level: Number(tag[1]), text});
      } else if (tag === 'TABLE') {
        const rows = tableRows(node);
        if (rows.length) blocks.push({kind: 'table', text: rows.join('\n')});
      } else if (tag === 'UL' || tag === 'OL') {
        let number = Number(node.getAttribute('start')) || 1;
        for (const item of node.children) {
          if (item.tagName.toUpperCase() !== 'LI') { visit(item, depth); continue; }
          const nested = [...item.querySelectorAll(':scope > ul, :scope > ol')];
          const own = squash([...item.childNodes].filter((c) => !nested.includes(c))
            .map((c) => c.textContent).join(' '));
          const mark = tag === 'OL' ? `${number++}.` : '-';
          if (own) blocks.push({kind: 'item', text: `${'  '.repeat(depth)}${mark} ${own}`});
          for (const list of nested) visit(list, depth + 1);
        }
      } else if (tag === 'PRE') {
        const text = node.textContent.replace(/\s+$/, '');
        if (text.trim()) blocks.push({kind: 'code', text});
      } else if (tag === 'HR') {
        // a break between blocks, nothing to say
      } else {
        for (const child of node.childNodes) visit(child, depth);
        flush();
        if (tag === 'BLOCKQUOTE' && blocks.length) {
          const last = blocks[blocks.length - 1];
          if (last.kind === 'text' && !last.text.startsWith('> ')) last.text = `> ${last.text}`;
        }
      }
      for (let i = before; i < blocks.length; i++) size += blocks[i].text.length + 2;
    };
    visit(root, 0);
    flush();
    return blocks;
  }

  /** A table as readable rows: `| cell | cell |`, the header row first. */
  function tableRows(table) {
    const rows = [];
    for (const row of table.querySelectorAll('tr')) {
      if (row.closest('table') !== table) continue;   // a nested table's rows
      const cells = [...row.children].filter((c) => /^(TD|TH)$/i.test(c.tagName))
        .map((c) => squash(c.textContent).replace(/\|/g, '/'));
      if (cells.some(Boolean)) rows.push(`| ${cells.join(' | ')} |`);
    }
    const caption = table.querySelector('caption');
    if (caption && squash(caption.textContent)) rows.unshift(squash(caption.textContent));
    return rows;
  }

  // ------------------------------------------------------------ the reader's functions

  function extract({maxChars = 400000} = {}) {
    const started = performance.now();
    if (!/html|xml/.test(document.contentType || 'text/html')) {
      return {unreadable: 'not-html', contentType: document.contentType, url: location.href,
              title: document.title || ''};
    }
    const {copy, dropped, frames, elements} = visibleCopy();
    let article = null, reader = 'whole page';
    // The page's text with its whitespace (a squash of 5 MB would cost a second).
    const rawChars = copy.body ? copy.body.textContent.length : 0;
    if (elements <= READABILITY_MAX_ELEMENTS && rawChars <= READABILITY_MAX_CHARS &&
        typeof Readability === 'function') {
      try {
        // serializer: keep the element (no HTML string to parse again).
        article = new Readability(copy.cloneNode(true), {serializer: (el) => el}).parse();
      } catch (error) {
        article = null;
      }
    }
    let blocks = [];
    if (article && article.content) {
      blocks = blocksOf(article.content, maxChars);
      const found = blocks.reduce((n, b) => n + b.text.length, 0);
      // Readability keeps the article; a page that is not one (a product table, a list of
      // results) can lose most of its text to it: then the whole visible page is read.
      const whole = squash(copy.body.textContent).length;
      if (found >= Math.min(500, whole * 0.5)) reader = 'reader view';
      else blocks = [];
    }
    if (!blocks.length && copy.body) blocks = blocksOf(copy.body, maxChars);
    let chars = 0, cut = false;
    const kept = [];
    for (const block of blocks) {
      if (chars + block.text.length > maxChars) {
        const room = maxChars - chars;
        if (room > 200) kept.push({...block, text: block.text.slice(0, room)});
        cut = true;
        break;
      }
      kept.push(block);
      chars += block.text.length + 2;
    }
    // The whole text's size: counted when every block was read, else the page's text.
    const total = cut ? Math.max(rawChars, chars)
                      : blocks.reduce((n, b) => n + b.text.length + 2, 0);
    return {
      title: (article && article.title) || document.title || '',
      url: location.href,
      lang: document.documentElement.lang || '',
      reader,
      blocks: kept,
      chars: Math.min(chars, total),
      totalChars: total,
      truncated: cut,
      hiddenDropped: dropped,
      framesSkipped: frames,
      ms: Math.round(performance.now() - started),
    };
  }

  function selection() {
    const active = document.activeElement;
    let text = '';
    if (active && /^(TEXTAREA|INPUT)$/.test(active.tagName) &&
        typeof active.selectionStart === 'number') {
      text = active.value.slice(active.selectionStart, active.selectionEnd);
    }
    if (!text) text = String(getSelection() || '');
    return {text: text.trim(), title: document.title, url: location.href};
  }

  function links({max = 200} = {}) {
    const seen = new Set(), out = [];
    for (const a of document.querySelectorAll('a[href]')) {
      if (out.length >= max) break;
      const href = a.href;
      if (!/^https?:/.test(href) || seen.has(href) || !a.checkVisibility()) continue;
      if (hiddenReason(a, document.defaultView)) continue;
      const text = squash(a.textContent) || a.getAttribute('aria-label') || a.title || '';
      seen.add(href);
      out.push({text: text.slice(0, 200), url: href});
    }
    return {links: out, title: document.title, url: location.href};
  }

  function images({max = 40} = {}) {
    const out = [];
    for (const img of document.querySelectorAll('img')) {
      if (out.length >= max) break;
      const src = img.currentSrc || img.src;
      if (!src || !img.naturalWidth || hiddenReason(img, document.defaultView)) continue;
      const alt = squash(img.getAttribute('alt') || img.title || img.getAttribute('aria-label') || '');
      out.push({alt: alt.slice(0, 300), url: src, width: img.naturalWidth, height: img.naturalHeight});
    }
    return {images: out, title: document.title, url: location.href};
  }

  const MAX_IMAGE_BYTES = 10 * 1024 * 1024;

  async function imageData({index = 1} = {}) {
    const found = images({max: index}).images[index - 1];
    if (!found) return {unreadable: 'missing', count: images().images.length};
    let response;
    try {
      response = await fetch(found.url, {credentials: 'same-origin'});
    } catch {
      return {unreadable: 'cross-origin', ...found};
    }
    if (!response.ok) return {unreadable: `status ${response.status}`, ...found};
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (bytes.length > MAX_IMAGE_BYTES) return {unreadable: 'too-large', ...found};
    let text = '';
    for (let at = 0; at < bytes.length; at += 0x8000) {
      text += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
    }
    return {...found, data: btoa(text), type: response.headers.get('content-type') || ''};
  }

  // ------------------------------------------------------------ showing a quote

  /** The visible text nodes, their text joined with collapsed whitespace, and where
   * each node starts in it. */
  function flatText() {
    const nodes = [], starts = [];
    let flat = '', space = true;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.parentElement && !SKIPPED.has(n.parentElement.tagName)
        ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT),
    });
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      nodes.push(n);
      starts.push(flat.length);
      let piece = '';
      for (const ch of n.data) {
        if (/\s/.test(ch)) { if (!space) { piece += ' '; space = true; } }
        else { piece += ch.toLowerCase(); space = false; }
      }
      flat += piece;
    }
    return {nodes, starts, flat};
  }

  /** The offset in `node`'s raw text of its `k`-th collapsed character. */
  function rawOffset(node, k, startsWithSpace) {
    let seen = 0, space = startsWithSpace;
    for (let i = 0; i < node.data.length; i++) {
      const ws = /\s/.test(node.data[i]);
      if (ws && space) continue;
      if (seen === k) return i;
      seen += 1;
      space = ws;
    }
    return node.data.length;
  }

  function locate(index, {nodes, starts, flat}) {
    let lo = 0, hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= index) lo = mid; else hi = mid - 1;
    }
    const node = nodes[lo];
    const before = starts[lo] === 0 || flat[starts[lo] - 1] === ' ';
    return {node, offset: rawOffset(node, index - starts[lo], before)};
  }

  /** The pieces of a quote worth looking for, longest first (a model may join two
   * passages with an ellipsis, or add quotation marks). */
  function needles(quote) {
    const clean = squash(quote.toLowerCase().replace(/[“”«»"]/g, ' ')).replace(/^[>\-\s]+/, '');
    const parts = clean.split(/\s*(?:…|\.\.\.)\s*/).map((p) => p.trim()).filter((p) => p.length >= 8);
    parts.sort((a, b) => b.length - a.length);
    const words = clean.split(' ');
    if (words.length > 12) parts.push(words.slice(0, 12).join(' '));
    return [...new Set([clean, ...parts])].filter(Boolean);
  }

  function show(quote) {
    if (!document.body || !quote) return {found: false};
    const text = flatText();
    for (const needle of needles(String(quote))) {
      let at = text.flat.indexOf(needle);
      while (at >= 0) {
        const start = locate(at, text), end = locate(at + needle.length - 1, text);
        const element = start.node.parentElement;
        if (element && !hiddenReason(element, document.defaultView)) {
          const range = document.createRange();
          range.setStart(start.node, start.offset);
          range.setEnd(end.node, Math.min(end.node.data.length, end.offset + 1));
          if (globalThis.CSS && CSS.highlights && globalThis.Highlight) {
            CSS.highlights.set(HIGHLIGHT, new Highlight(range));
          }
          element.scrollIntoView({block: 'center', behavior: 'instant'});
          return {found: true, text: range.toString()};
        }
        at = text.flat.indexOf(needle, at + 1);
      }
    }
    return {found: false};
  }

  globalThis.pyAgentPageReader = {extract, selection, links, images, imageData, show, HIGHLIGHT};
})();
