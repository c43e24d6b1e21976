/*
 * The page reader: what the extension runs inside the tab the user reads (injected with
 * chrome.scripting.executeScript, after the vendored Readability.js, into the
 * extension's isolated world: the page's own scripts cannot see or change it).
 *
 * It only reads, and reads only what the user can see:
 *   extract({maxChars})  the page's main text as Firefox's reader view finds it
 *                        (Readability), as blocks (headings, paragraphs, list items,
 *                        table rows kept as rows), with its title and URL. Text the user
 *                        cannot see is dropped before Readability sees the page: its
 *                        visibility is computed (below: rendering, opacity through the
 *                        ancestors, clipping, transforms, its drawn size and place, its
 *                        colour against what is behind it, elements drawn over it), and
 *                        what was left out is counted by reason and in characters
 *                        (hiddenDropped, hiddenChars); frames are not read (a note says
 *                        how many were skipped); past maxChars the text is cut and the
 *                        result says so.
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
  //
  // Visibility is computed, not guessed from a few properties. An element is left out
  // with all it holds when the browser does not render it (display, visibility,
  // content-visibility: checkVisibility) or it is too faint (its opacity multiplied
  // through its ancestors), or its clip-path collapses it. Each text node left is then
  // measured where it is drawn (a Range's boxes, so transforms and text-indent count):
  // left out when its boxes have no size (a transform to scale(0)), are too small to read,
  // lie outside every box that clips them (overflow, clip, clip-path of it and its
  // ancestors, and the page's own edges: nothing can scroll to -9999px), when its colour
  // against the colour behind it is under CONTRAST_MIN (text in the background's colour),
  // or when another opaque element is drawn over it at every sample point
  // (document.elementsFromPoint inside the window; the page's positioned elements, by
  // geometry and stacking order, anywhere).
  const CONTRAST_MIN = 1.5;     // WCAG contrast ratio: 1 is invisible, 4.5 body text
  const FAINT_OPACITY = 0.1;    // opacity multiplied through the ancestors
  const OPAQUE = 0.9;           // a cover at least this opaque hides what is under it
  const MAX_COVERS = 3000;      // positioned elements considered as covers
  const MAX_WORDS = 20000;      // words of one partly seen text node measured one by one
  const REPLACED = new Set(['IMG', 'VIDEO', 'CANVAS', 'SVG', 'PICTURE', 'OBJECT', 'EMBED',
                            'IFRAME']);
  const CLIPPING = new Set(['hidden', 'clip']);
  const REASONS = ['hidden', 'faint', 'clipped', 'collapsed', 'tiny', 'off-screen',
                   'background', 'covered'];

  const FULL = {left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity};
  const meet = (a, b) => ({left: Math.max(a.left, b.left), top: Math.max(a.top, b.top),
                           right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom)});
  const width = (r) => Math.max(0, r.right - r.left);
  const height = (r) => Math.max(0, r.bottom - r.top);
  const inside = (r, x, y) => x >= r.left && x <= r.right && y >= r.top && y <= r.bottom;

  /** An sRGB colour as [r, g, b, a] (0-255, alpha 0-1), or null if it cannot be read. */
  const colours = new Map();
  function colour(text) {
    if (colours.has(text)) return colours.get(text);
    let found = null;
    const rgb = /^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)$/
      .exec(text);
    if (rgb) {
      const alpha = rgb[4] === undefined ? 1 : rgb[4].endsWith('%')
        ? parseFloat(rgb[4]) / 100 : parseFloat(rgb[4]);
      found = [+rgb[1], +rgb[2], +rgb[3], alpha];
    } else if (text === 'transparent') {
      found = [0, 0, 0, 0];
    } else {
      // another colour space (oklch, color(display-p3 ...)): drawn once, read back
      try {
        const canvas = document.createElement('canvas');
        canvas.width = canvas.height = 1;
        const context = canvas.getContext('2d', {willReadFrequently: true});
        context.fillStyle = text;
        context.fillRect(0, 0, 1, 1);
        const [r, g, b, a] = context.getImageData(0, 0, 1, 1).data;
        found = [r, g, b, a / 255];
      } catch (error) {
        found = null;
      }
    }
    colours.set(text, found);
    return found;
  }

  const over = (top, below) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3]));

  function luminance([r, g, b]) {
    const [R, G, B] = [r, g, b].map((v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * R + 0.7152 * G + 0.0722 * B;
  }

  function contrast(a, b) {
    const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  }

  /** The box a clip-path keeps of `rect` (a bounding box for shapes), or null when it
   * keeps nothing; FULL when it cannot be read (then nothing is taken away). */
  function clipPathBox(value, rect) {
    if (!value || value === 'none') return FULL;
    const length = (v, size) => (v.endsWith('%') ? parseFloat(v) / 100 * size : parseFloat(v) || 0);
    let m = /^inset\(([^)]*)\)/.exec(value);
    if (m) {
      const parts = m[1].split(/\s+round\s+/)[0].trim().split(/\s+/);
      const [t, r = t, b = t, l = r] = parts;
      const w = rect.right - rect.left, h = rect.bottom - rect.top;
      const box = {left: rect.left + length(l, w), top: rect.top + length(t, h),
                   right: rect.right - length(r, w), bottom: rect.bottom - length(b, h)};
      return width(box) > 0 && height(box) > 0 ? box : null;
    }
    m = /^(circle|ellipse)\(\s*([\d.]+)(px|%)?/.exec(value);
    if (m && parseFloat(m[2]) === 0) return null;
    m = /^polygon\(([^)]*)\)/.exec(value);
    if (m) {
      const w = rect.right - rect.left, h = rect.bottom - rect.top;
      const points = m[1].split(',').map((p) => p.trim().split(/\s+/).slice(-2))
        .filter((p) => p.length === 2).map(([x, y]) => [rect.left + length(x, w), rect.top + length(y, h)]);
      if (points.length < 3) return null;
      const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
      const box = {left: Math.min(...xs), top: Math.min(...ys), right: Math.max(...xs), bottom: Math.max(...ys)};
      return width(box) > 0 && height(box) > 0 ? box : null;
    }
    return FULL;
  }

  /** What the user can see of the live page (see above), with its caches. */
  class Sight {
    constructor(view) {
      this.view = view;
      this.scrollX = view.scrollX;   // the page does not move while it is read
      this.scrollY = view.scrollY;
      this.styles = new Map();
      this.backgrounds = new Map();
      this.coverList = null;
    }

    /** `el`'s computed style, each property read from the browser once (a read costs a
     * serialization; the walk reads some several times). */
    style(el) {
      let style = this.styles.get(el);
      if (!style) {
        const computed = this.view.getComputedStyle(el);
        style = new Proxy({}, {get: (values, name) => (name in values ? values[name]
          : (values[name] = computed[name]))});
        this.styles.set(el, style);
      }
      return style;
    }

    /** A box of the live page in page coordinates (not moved by scrolling). */
    pageRect(rect) {
      const x = this.scrollX, y = this.scrollY;
      return {left: rect.left + x, top: rect.top + y, right: rect.right + x, bottom: rect.bottom + y};
    }

    /** What the page itself lets be seen: nothing above or left of its origin, and on an
     * axis the root does not scroll (overflow hidden), nothing past the window. */
    rootClips() {
      const root = document.documentElement, body = document.body;
      const box = {left: 0, top: 0, right: Infinity, bottom: Infinity};
      for (const el of [root, body]) {
        if (!el) continue;
        const style = this.style(el);
        if (CLIPPING.has(style.overflowX)) box.right = Math.min(box.right, root.clientWidth + this.scrollX);
        if (CLIPPING.has(style.overflowY)) box.bottom = Math.min(box.bottom, root.clientHeight + this.scrollY);
      }
      return [{box, el: root}];
    }

    /** Why element `el` and all it holds is not seen, or '' (`context`: its parent's). */
    elementReason(el, context) {
      const style = this.style(el);
      if (style.display !== 'contents' &&
          !el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true,
                               contentVisibilityAuto: true})) return 'hidden';
      if (context.opacity * parseFloat(style.opacity || '1') < FAINT_OPACITY) return 'faint';
      if (style.clipPath && style.clipPath !== 'none' &&
          clipPathBox(style.clipPath, this.pageRect(el.getBoundingClientRect())) === null) {
        return 'clipped';
      }
      return '';
    }

    /** The context `el`'s children are seen in: the opacity so far, and the boxes that
     * clip them (an element positioned out of flow escapes the clips of the ancestors
     * between it and its containing block). */
    inner(el, context) {
      const style = this.style(el);
      let clips = context.clips;
      if (style.position === 'fixed') {
        clips = clips.slice(0, 1);
      } else if (style.position === 'absolute') {
        const block = el.offsetParent;
        clips = clips.filter((c, i) => i === 0 || (block && (c.el === block || c.el.contains(block))));
      }
      const own = [];
      const clipX = CLIPPING.has(style.overflowX), clipY = CLIPPING.has(style.overflowY);
      const path = style.clipPath && style.clipPath !== 'none';
      const clip = (style.position === 'absolute' || style.position === 'fixed') &&
        /^rect\(([^)]*)\)$/.exec(style.clip || '');
      if (style.display !== 'contents' && (clipX || clipY || path || clip)) {
        const rect = this.pageRect(el.getBoundingClientRect());
        if (clipX || clipY) {
          own.push({left: clipX ? rect.left : -Infinity, right: clipX ? rect.right : Infinity,
                    top: clipY ? rect.top : -Infinity, bottom: clipY ? rect.bottom : Infinity});
        }
        if (path) {
          const box = clipPathBox(style.clipPath, rect);
          if (box && box !== FULL) own.push(box);
        }
        if (clip) {
          const [t, r, b, l] = clip[1].split(/[\s,]+/).map((v) => (v === 'auto' ? null : parseFloat(v)));
          own.push({left: rect.left + (l ?? 0), top: rect.top + (t ?? 0),
                    right: r === null ? rect.right : rect.left + r,
                    bottom: b === null ? rect.bottom : rect.top + b});
        }
      }
      return {opacity: context.opacity * parseFloat(style.opacity || '1'),
              clips: own.length ? [...clips, ...own.map((box) => ({box, el}))] : clips};
    }

    /** Where a box of text is, against the boxes that may show it: '' (seen),
     * 'collapsed', 'tiny', 'off-screen' or 'clipped'. */
    placed(r, root, clip) {
      if (width(r) <= 0.5 || height(r) <= 0.5) return 'collapsed';
      if (height(r) < TINY_FONT_PX) return 'tiny';
      const page = meet(r, root);
      if (width(page) < 1 || height(page) < 1) return 'off-screen';
      const shown = meet(r, clip);
      return width(shown) >= 2 && height(shown) >= TINY_FONT_PX ? '' : 'clipped';
    }

    /** Why text node `node` is not seen ({reason}), or {reason: '', partly}: `partly`
     * when some of its lines are seen and others not (a tail clipped by its box)
     * (`context`: its parent element's inner). */
    textReason(node, context) {
      const el = node.parentElement;
      const range = document.createRange();
      range.selectNodeContents(node);
      const root = context.clips[0].box;
      const clip = context.clips.reduce((box, c) => meet(box, c.box), FULL);
      const rects = [...range.getClientRects()].map((r) => this.pageRect(r));
      const places = rects.map((r) => this.placed(r, root, clip));
      const seen = rects.filter((r, i) => places[i] === '');
      if (!seen.length) {
        for (const reason of ['clipped', 'off-screen', 'tiny', 'collapsed']) {
          if (places.includes(reason)) return {reason};
        }
        return {reason: 'collapsed'};
      }
      const points = seen.slice(0, 3).map((r) => meet(r, clip))
        .map((r) => [(r.left + r.right) / 2, (r.top + r.bottom) / 2]);
      const style = this.style(el);
      if (!this.standsOut(el, style, points[0])) return {reason: 'background'};
      if (points.every(([x, y]) => this.coveredAt(x, y, el))) return {reason: 'covered'};
      const partly = places.some((place) => place === 'clipped' || place === 'off-screen');
      return {reason: '', partly, root, clip};
    }

    /** The words of `node` a person can see, for a node only partly seen: {text, left:
     * characters left out, reason}. Each word is measured where it is drawn. */
    seenWords(node, {root, clip}) {
      const range = document.createRange();
      const kept = [];
      let left = 0, reason = 'clipped', count = 0;
      for (const match of node.data.matchAll(/\S+/g)) {
        if (++count > MAX_WORDS) { kept.push(match[0]); continue; }   // measured enough
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const place = this.placed(this.pageRect(range.getBoundingClientRect()), root, clip);
        if (!place || place === 'tiny' || place === 'collapsed') kept.push(match[0]);
        else { left += match[0].length + 1; reason = place; }
      }
      return {text: kept.join(' '), left, reason};
    }

    /** Whether `el`'s text colour differs enough from what is behind it at `point`. */
    standsOut(el, style, [x, y]) {
      const ink = colour(style.webkitTextFillColor || style.color);
      const behind = this.backdrop(el, x, y);
      if (!ink || !behind) return true;   // not known: kept
      if (contrast(over(ink, behind), behind) >= CONTRAST_MIN) return true;
      // an outline or a shadow can make it stand out after all
      return style.textShadow !== 'none' || parseFloat(style.webkitTextStrokeWidth) > 0;
    }

    /** The colour behind `el` at (x, y): the topmost element drawn below it there (a
     * positioned one, found by geometry), else its ancestors' backgrounds over white;
     * null when a picture or a gradient is behind (not known). */
    backdrop(el, x, y) {
      let base = this.ancestorBackground(el);
      const below = this.covers().filter((c) => c.background && inside(c.rect, x, y) &&
        c.el !== el && !c.el.contains(el) && !el.contains(c.el) && !this.paintsAbove(c.el, el));
      if (below.length) {
        const top = below[below.length - 1];
        if (top.image) return null;
        base = over(top.background, base || [255, 255, 255]);
      }
      return base;
    }

    /** The colour of `el`'s own background over its ancestors' (over white), or null
     * when a picture or gradient is among them; kept per element. */
    ancestorBackground(el) {
      if (!el) return [255, 255, 255];
      if (this.backgrounds.has(el)) return this.backgrounds.get(el);
      const style = this.style(el);
      let result;
      if (style.backgroundImage !== 'none') {
        result = null;
      } else {
        const own = colour(style.backgroundColor);
        if (!own) result = null;
        else if (own[3] >= 1) result = own.slice(0, 3);
        else {
          const below = this.ancestorBackground(el.parentElement);
          result = below && (own[3] > 0 ? over(own, below) : below);
        }
      }
      this.backgrounds.set(el, result);
      return result;
    }

    /** The page's elements drawn in a layer of their own (positioned, transformed,
     * translucent): what may be drawn over, or under, other text. */
    covers() {
      if (this.coverList) return this.coverList;
      this.coverList = [];
      for (const el of document.body ? document.body.getElementsByTagName('*') : []) {
        if (this.coverList.length >= MAX_COVERS) break;
        const style = this.style(el);
        if (style.position === 'static' && style.transform === 'none' && style.opacity === '1') continue;
        if (style.visibility !== 'visible' || style.display === 'none') continue;
        const rect = this.pageRect(el.getBoundingClientRect());
        if (width(rect) < 1 || height(rect) < 1) continue;
        const bg = colour(style.backgroundColor);
        const image = style.backgroundImage && style.backgroundImage !== 'none';
        const replaced = REPLACED.has(el.tagName.toUpperCase());
        const opacity = this.opacityOf(el);
        const opaque = opacity >= OPAQUE && (replaced || image || (bg && bg[3] >= OPAQUE));
        this.coverList.push({el, rect, opaque, image: image || replaced,
                             untouchable: style.pointerEvents === 'none',
                             background: bg && bg[3] > 0 ? bg : (image || replaced ? [0, 0, 0, 1] : null)});
      }
      return this.coverList;
    }

    opacityOf(el) {
      let opacity = 1;
      for (let e = el; e && opacity >= FAINT_OPACITY; e = e.parentElement) {
        opacity *= parseFloat(this.style(e).opacity || '1');
      }
      return opacity;
    }

    zOf(el) {
      const z = parseInt(this.style(el).zIndex, 10);
      return Number.isFinite(z) ? z : 0;
    }

    /** Whether `cover` (a layer of its own) is drawn over `el`: by z-index, then by the
     * order of the page (an approximation of CSS stacking that holds for the usual
     * overlays). */
    paintsAbove(cover, el) {
      const z = this.zOf(cover);
      if (z < 0) return false;
      let layer = el;
      while (layer && layer !== document.body) {
        const style = this.style(layer);
        if (style.position !== 'static' || style.transform !== 'none' || style.opacity !== '1') break;
        layer = layer.parentElement;
      }
      if (!layer || layer === document.body) return true;   // in the flow: under every layer
      if (layer === cover || cover.contains(layer)) return false;
      const own = this.zOf(layer);
      if (z !== own) return z > own;
      return Boolean(layer.compareDocumentPosition(cover) & Node.DOCUMENT_POSITION_FOLLOWING);
    }

    /** Whether an opaque element is drawn over `el` at page point (x, y). */
    coveredAt(x, y, el) {
      const cx = x - this.scrollX, cy = y - this.scrollY;
      let onTop = false;
      if (cx >= 0 && cy >= 0 && cx < this.view.innerWidth && cy < this.view.innerHeight) {
        for (const hit of document.elementsFromPoint(cx, cy)) {
          if (hit === el || el.contains(hit)) { onTop = true; break; }  // its own element first
          if (hit.contains(el)) continue;                // an ancestor is drawn under it
          const cover = this.covers().find((c) => c.el === hit);
          if ((cover && cover.opaque) || (!cover && this.opaqueInFlow(hit))) return true;
        }
      }
      // hit testing passes through an element with pointer-events: none, and does not
      // reach outside the window: there, the positioned elements' geometry decides
      return this.covers().some((c) => c.opaque && (!onTop || c.untouchable) &&
        inside(c.rect, x, y) && c.el !== el && !c.el.contains(el) && !el.contains(c.el) &&
        this.paintsAbove(c.el, el));
    }

    opaqueInFlow(el) {
      const style = this.style(el);
      const bg = colour(style.backgroundColor);
      return this.opacityOf(el) >= OPAQUE && (REPLACED.has(el.tagName.toUpperCase()) ||
        (style.backgroundImage && style.backgroundImage !== 'none') || (bg && bg[3] >= OPAQUE));
    }

    /** The context `el` is seen in, from the page's root down (for one element alone). */
    contextOf(el) {
      const chain = [];
      for (let e = el.parentElement; e && e !== document.documentElement; e = e.parentElement) chain.push(e);
      let context = {opacity: 1, clips: this.rootClips()};
      for (const e of chain.reverse()) context = this.inner(e, context);
      return context;
    }

    /** Why `el` (of the live page, looked at alone) is not seen, or ''. */
    elementHidden(el) {
      for (let e = el; e && e !== document.body; e = e.parentElement) {
        if (!e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) return 'hidden';
      }
      const context = this.contextOf(el);
      const reason = this.elementReason(el, context);
      if (reason) return reason;
      const inner = this.inner(el, context);
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      let first = '';
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (!n.data.trim()) continue;
        const why = this.textReason(n, n.parentElement === el ? inner : this.contextOf(n)).reason;
        if (!why) return '';
        first = first || why;
      }
      return first;
    }
  }

  const charsOf = (node) => squash(node.textContent || '').length;

  /**
   * A copy of the page without what the user cannot see: the live page and its copy
   * (the same shape right after cloneNode) are walked side by side, and each copied
   * element or text node whose original is not seen is removed; what was left out is
   * counted by reason, in pieces and in characters.
   */
  function visibleCopy() {
    const view = document.defaultView;
    const copy = document.cloneNode(true);
    const dropped = Object.fromEntries(REASONS.map((r) => [r, 0]));
    let frames = 0, elements = 0, droppedChars = 0;
    if (!document.body || !copy.body) return {copy, dropped, droppedChars, frames, elements};
    const sight = new Sight(view);
    const doomed = [];
    const leaveOut = (twin, reason, chars) => {
      dropped[reason] += 1;
      droppedChars += chars;
      doomed.push(twin);
    };
    const stack = [[document.body, copy.body, sight.inner(document.body,
                                                         {opacity: 1, clips: sight.rootClips()})]];
    while (stack.length) {
      const [node, twin, context] = stack.pop();
      const kids = [...node.childNodes], twins = [...twin.childNodes];
      for (let i = kids.length - 1; i >= 0; i--) {
        const child = kids[i], copied = twins[i];
        if (!copied) continue;
        if (child.nodeType === Node.TEXT_NODE) {
          if (!child.data.trim()) continue;
          const looked = sight.textReason(child, context);
          if (looked.reason) {
            leaveOut(copied, looked.reason, squash(child.data).length);
          } else if (looked.partly) {   // keep the words that are seen
            const seen = sight.seenWords(child, looked);
            if (seen.left) {
              dropped[seen.reason] += 1;
              droppedChars += seen.left - 1;
              copied.data = seen.text;
            }
          }
          continue;
        }
        if (child.nodeType !== Node.ELEMENT_NODE) continue;
        elements += 1;
        const tag = child.tagName.toUpperCase();
        if (tag === 'IFRAME' || tag === 'FRAME') {
          if (child.checkVisibility()) frames += 1;
          doomed.push(copied);
          continue;
        }
        if (SKIPPED.has(tag)) { doomed.push(copied); continue; }
        const reason = sight.elementReason(child, context);
        if (reason) {
          if (child.textContent.trim()) leaveOut(copied, reason, charsOf(child));
          else doomed.push(copied);
          continue;
        }
        stack.push([child, copied, sight.inner(child, context)]);
      }
    }
    for (const node of doomed) node.remove();
    return {copy, dropped, droppedChars, frames, elements};
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
    const {copy, dropped, droppedChars, frames, elements} = visibleCopy();
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
      hiddenChars: droppedChars,
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
    const sight = new Sight(document.defaultView);
    for (const a of document.querySelectorAll('a[href]')) {
      if (out.length >= max) break;
      const href = a.href;
      if (!/^https?:/.test(href) || seen.has(href) || !a.checkVisibility()) continue;
      if (sight.elementHidden(a)) continue;
      const text = squash(a.textContent) || a.getAttribute('aria-label') || a.title || '';
      seen.add(href);
      out.push({text: text.slice(0, 200), url: href});
    }
    return {links: out, title: document.title, url: location.href};
  }

  function images({max = 40} = {}) {
    const out = [];
    const sight = new Sight(document.defaultView);
    for (const img of document.querySelectorAll('img')) {
      if (out.length >= max) break;
      const src = img.currentSrc || img.src;
      if (!src || !img.naturalWidth || sight.elementHidden(img)) continue;
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
    const sight = new Sight(document.defaultView);
    for (const needle of needles(String(quote))) {
      let at = text.flat.indexOf(needle);
      while (at >= 0) {
        const start = locate(at, text), end = locate(at + needle.length - 1, text);
        const element = start.node.parentElement;
        if (element && !sight.elementHidden(element)) {
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

  /** Why the user does not see `el` of the page (a reason of extract()'s hiddenDropped),
   * or '' if they may: for one element, as extract() decides for each. */
  const why = (el) => new Sight(document.defaultView).elementHidden(el);

  globalThis.pyAgentPageReader = {extract, selection, links, images, imageData, show, why, HIGHLIGHT};
})();
