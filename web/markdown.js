/**
 * Markdown answers as DOM nodes: markdown-it parses (raw HTML off), and its token stream
 * is built into elements with createElement/textContent. No HTML string is ever parsed.
 *
 * The page's UI is MicroPython; this walk is JavaScript because it is hot: a 40 KB answer
 * is thousands of tokens, and each token read and node made from MicroPython is a trip
 * through its FFI. Measured in the page (bench/markdown_walk.py): building a 40 KB
 * answer's DOM is about ten times faster here than the same walk in MicroPython
 * (4 ms vs 45 ms on a quiet machine).
 */
import MarkdownIt from './vendor/markdown-it-15.0.3/markdown-it.esm.min.mjs';

const SAFE_URL = /^(https?:|mailto:)/i;

/** Elements a token may become; anything else (images, raw HTML) is text or skipped. */
const TAGS = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote', 'ul', 'ol', 'li',
  'table', 'thead', 'tbody', 'tr', 'th', 'td', 'em', 'strong', 's', 'a']);

/**
 * A parser with the page's rules: CommonMark plus tables and strikethrough, raw HTML
 * shown as text, bare http(s) URLs and e-mail addresses become links, and only http(s)
 * and mailto: targets are links at all. ``strict``: CommonMark alone (for conformance).
 * (Whether a newline is a line break is build()'s business, not the parser's.)
 */
export function createParser({ strict = false } = {}) {
  if (strict) return new MarkdownIt('commonmark', { html: false });
  const md = new MarkdownIt('default', { html: false, linkify: true, typographer: false });
  md.linkify.set({ fuzzyLink: false });   // "main.py" and "www.x.org" stay text
  md.validateLink = (url) => SAFE_URL.test(url.trim());
  return md;
}

const pageParser = createParser();
const { unescapeAll } = pageParser.utils;

const PAGE = { headingOffset: 2, breaks: true, safe: true };
const MAX_DEPTH = 64;   // elements deep; what lies deeper keeps its text, not its nesting

/**
 * Append the DOM of markdown-it ``tokens`` to ``parent``. Options: ``headingOffset``
 * (the page's headings sit under its own h1/h2: # becomes h3), ``breaks`` (a newline is a
 * line break), ``safe`` (links only to http(s)/mailto, opening in a new tab, no referrer).
 */
export function build(tokens, parent, options = PAGE, depth = 0) {
  const stack = [parent];
  for (const token of tokens) {
    if (token.nesting === -1) {
      stack.pop();
      continue;
    }
    const top = stack[stack.length - 1];
    // A newline between blocks: invisible, but textContent reads as lines.
    if (token.block && !token.hidden && token.type !== 'inline' && top.lastChild) top.append('\n');
    if (token.nesting === 1) {
      const deep = depth + stack.length > MAX_DEPTH;
      stack.push(token.hidden || deep ? top : open(token, top, options));
    } else if (token.type === 'inline') {
      build(token.children, top, options, depth + stack.length - 1);
    } else {
      leaf(token, top, options);
    }
  }
}

function open(token, parent, { headingOffset, safe }) {
  let tag = token.tag;
  if (!TAGS.has(tag)) return parent;
  const heading = /^h[1-6]$/.test(tag);
  if (heading) tag = 'h' + Math.min(6, Number(tag[1]) + headingOffset);
  const href = token.attrGet('href');
  if (tag === 'a' && safe && !SAFE_URL.test(href)) return parent;
  const node = parent.appendChild(parent.ownerDocument.createElement(tag));
  if (tag === 'a') {
    node.setAttribute('href', href);
    const title = token.attrGet('title');
    if (title) node.setAttribute('title', title);
    if (safe) newTab(node);
  } else if (tag === 'ol') {
    const start = token.attrGet('start');
    if (start !== null) node.setAttribute('start', start);
  } else if (tag === 'th' || tag === 'td') {
    const align = /text-align:(\w+)/.exec(token.attrGet('style') || '');
    if (align) node.setAttribute('data-align', align[1]);
  } else if (heading && headingOffset) {
    node.className = 'md-heading';
  }
  return node;
}

function newTab(link) {
  link.setAttribute('rel', 'noopener noreferrer');
  link.setAttribute('target', '_blank');
}

function leaf(token, parent, { breaks, safe }) {
  const doc = parent.ownerDocument;
  switch (token.type) {
    case 'softbreak':
      if (breaks) parent.append(doc.createElement('br'));
      parent.append('\n');
      return;
    case 'hardbreak':
      parent.append(doc.createElement('br'), '\n');
      return;
    case 'code_inline':
      parent.appendChild(doc.createElement('code')).textContent = token.content;
      return;
    case 'fence':
    case 'code_block': {
      const pre = parent.appendChild(doc.createElement('pre'));
      const code = pre.appendChild(doc.createElement('code'));
      code.textContent = token.content;
      const lang = unescapeAll(token.info || '').trim().split(/\s+/)[0];
      if (lang) code.className = 'language-' + lang;
      if (safe) {
        pre.className = 'md-code';
        if (lang) pre.setAttribute('data-lang', lang.slice(0, 30));
      }
      return;
    }
    case 'hr':
      parent.append(doc.createElement('hr'));
      return;
    case 'image':
      image(token, parent, safe);
      return;
    default:   // text, and raw HTML (which the page's parser never makes) as text
      if (token.content) parent.append(token.content);
  }
}

/** No images: loading one is a request the user did not ask for (and a way to send data
 * out of the page); the alt text becomes a link to the image instead. */
function image(token, parent, safe) {
  const alt = (token.children || []).map((child) => child.content).join('');
  const src = token.attrGet('src');
  if (!safe || !SAFE_URL.test(src) || parent.closest?.('a')) {
    parent.append(alt);
    return;
  }
  const link = parent.appendChild(parent.ownerDocument.createElement('a'));
  link.setAttribute('href', src);
  newTab(link);
  link.className = 'md-image';
  link.textContent = alt || src;
}

/** Replace ``parent``'s children with the rendered Markdown of ``text``. */
export function render(text, parent) {
  streams.delete(parent);
  text = normalize(text);
  const tokens = pageParser.parse(text, {});
  if (tooDeep(tokens)) {
    showAsText(text, parent);
    return;
  }
  const fragment = parent.ownerDocument.createDocumentFragment();
  build(tokens, fragment);
  parent.replaceChildren(fragment);
}

/** Past its nesting limit markdown-it stops building blocks and drops what lies deeper;
 * rather than lose text, such an answer is shown as it was written. */
function tooDeep(tokens) {
  const limit = pageParser.options.maxNesting - 1;
  return tokens.some((token) => token.level >= limit);
}

function showAsText(text, parent) {
  const node = parent.ownerDocument.createElement('p');
  node.className = 'md-plain';
  node.textContent = text;
  parent.replaceChildren(node);
}

// ------------------------------------------------------------------ streaming
//
// While an answer streams in, the same text comes back longer every time. A top-level
// block is final once the line starting the next one is complete (CommonMark decides
// block structure line by line, and only the last open block can still change), so
// only the text from the first block that can still change is parsed and built again;
// the DOM of the blocks before it stays. A link reference definition can change links
// anywhere, so a new or changed one starts the answer over.

const streams = new WeakMap();   // parent -> {frozen, nodes, first, refs, refsKey}

function normalize(text) {
  return String(text).replace(/\r\n?/g, '\n');
}

function restart(parent) {
  const state = { frozen: '', nodes: 0, first: null, refs: {}, refsKey: '{}' };
  parent.replaceChildren();
  streams.set(parent, state);
  return state;
}

/** Show ``text``, an answer still arriving, in ``parent``: what render(text) would show,
 * rebuilding only the blocks that the rest of the answer could still change. */
export function preview(text, parent) {
  text = normalize(text);
  let state = streams.get(parent);
  if (!state || !text.startsWith(state.frozen) || parent.childNodes.length < state.nodes
      || parent.firstChild !== state.first) {
    state = restart(parent);
  }
  let tail = text.slice(state.frozen.length);
  let env = { references: { ...state.refs } };
  let tokens = pageParser.parse(tail, env);
  if (state.frozen && JSON.stringify(env.references) !== state.refsKey) {
    state = restart(parent);
    tail = text;
    env = { references: {} };
    tokens = pageParser.parse(tail, env);
  }
  if (tooDeep(tokens)) {
    streams.delete(parent);
    showAsText(text, parent);
    return;
  }
  state.refsKey = JSON.stringify(env.references);
  const cut = liveStart(tokens, tail);
  while (parent.childNodes.length > state.nodes) parent.lastChild.remove();
  if (cut.token > 0) {
    attach(tokens.slice(0, cut.token), parent);
    state.nodes = parent.childNodes.length;
    state.first = parent.firstChild;
    const segment = tail.slice(0, cut.char);
    if (Object.keys(env.references).length > Object.keys(state.refs).length) {
      const segmentEnv = { references: { ...state.refs } };
      pageParser.block.parse(segment, pageParser, segmentEnv, []);
      state.refs = segmentEnv.references;
    }
    state.frozen += segment;
  }
  attach(tokens.slice(cut.token), parent);
  if (!state.nodes) state.first = parent.firstChild;
}

/** Build ``tokens`` after what ``parent`` holds, a newline between, as render() does. */
function attach(tokens, parent) {
  const fragment = parent.ownerDocument.createDocumentFragment();
  build(tokens, fragment);
  if (parent.lastChild && fragment.firstChild) parent.append('\n');
  parent.append(fragment);
}

/** Where the blocks that can still change start: {token: index, char: offset in text}. */
function liveStart(tokens, text) {
  const complete = text.split('\n').length - 1;   // lines that have their newline
  const starts = [];
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i].level === 0 && tokens[i].nesting !== -1 && tokens[i].map) starts.push(i);
  }
  let live = starts.length - 1;
  while (live > 0 && tokens[starts[live]].map[0] >= complete) live--;
  if (live <= 0) return { token: 0, char: 0 };
  let char = 0;
  for (let line = tokens[starts[live]].map[0]; line > 0; line--) char = text.indexOf('\n', char) + 1;
  return { token: starts[live], char };
}
