/*
 * The tab reader of the extension's side panel: the tab the user is on, read through the
 * page reader (page_reader.js, injected with chrome.scripting). Its raw tools, in
 * WebMCP's shape ({name, description, inputSchema, execute(input) -> Promise,
 * annotations}), go to the page tools host (web/page_tools.js) with source 'tab': the
 * agent worker calls them there, and py_agent.page makes the tools the model is offered
 * out of them (read_page with the passages that match, find_in_page, summarize_page,
 * page_selection, page_links, list_tabs). All of them only read (readOnlyHint).
 *
 * Which tab: the active tab of the window the user is in; when this page runs in a tab of
 * its own (the tests, or someone who opened sidepanel.html), the tab used just before it.
 * What may be read: the extension asks for no host permission, so a tab is readable once
 * the user opened the panel on it (activeTab) or on a site the build named. A tab that
 * cannot be read (chrome:// pages, the Web Store, the PDF viewer, a closed tab) gives an
 * error whose message says why, for the model and the user to read.
 *
 * showQuote(quote, tabId?) scrolls the tab to a quoted passage and highlights it (the
 * answer's quotes call it when clicked).
 */

const CALL_TIMEOUT_MS = 20000;
// The text a read brings at most: a 5 MB page is read up to here, and the result says so.
export const MAX_PAGE_CHARS = 400000;
const REREAD_AFTER_MS = 15000;
const HIGHLIGHT_CSS = '::highlight(py-agent-quote) { background-color: #ffd43b; color: #000; }';

export class PageUnreadableError extends Error {
  constructor(message, reason) {
    super(message);
    this.name = 'PageUnreadableError';
    this.reason = reason;
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new PageUnreadableError(
      `${what} did not answer within ${ms / 1000} s (the page may be busy).`, 'timeout')), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Why a tab at `url` cannot be read, before trying ('' if it may be). */
export function unreadableBecause(url) {
  if (!url) return '';
  const scheme = url.split(':', 1)[0].toLowerCase();
  if (['chrome', 'edge', 'about', 'devtools', 'view-source', 'chrome-untrusted',
       'chrome-search', 'brave', 'opera', 'vivaldi'].includes(scheme)) {
    return `it is a browser page (${scheme}://), which extensions may not read`;
  }
  if (scheme === 'chrome-extension' || scheme === 'extension') {
    return 'it is a page of an extension, which other extensions may not read';
  }
  if (scheme === 'data' || scheme === 'blob' || scheme === 'javascript') {
    return `it is a ${scheme}: page, which extensions may not read`;
  }
  return '';
}

/** Chrome's refusal, said for the user. */
function explain(error, tab) {
  const text = String(error && error.message || error);
  if (/No tab with id/i.test(text)) {
    return new PageUnreadableError('The tab was closed before it could be read.', 'closed');
  }
  if (/extensions gallery cannot be scripted/i.test(text)) {
    return new PageUnreadableError('The tab is the Chrome Web Store, which extensions may ' +
                                   'not read.', 'web-store');
  }
  if (/Cannot access a chrome|chrome:\/\/|edge:\/\/|about:/i.test(text)) {
    return new PageUnreadableError('That tab is a browser page (chrome://), which extensions ' +
                                   'may not read.', 'browser-page');
  }
  if (/Cannot access|permission|must request/i.test(text)) {
    const where = tab && tab.url ? ` (${tab.url})` : '';
    return new PageUnreadableError(
      `This extension may not read that tab${where}: open the side panel on it (click the ` +
      'py-agent button while the tab is shown) and ask again. PDFs in Chrome\'s viewer ' +
      'and browser pages cannot be read at all.', 'no-access');
  }
  if (/frame|Frame with ID/i.test(text)) {
    return new PageUnreadableError('The page changed while it was read; ask again.', 'navigated');
  }
  return new PageUnreadableError(`The tab could not be read: ${text}`, 'failed');
}

/** A data: URL's bytes (captureVisibleTab gives one). */
function dataUrlBytes(url) {
  return Uint8Array.from(atob(url.slice(url.indexOf(',') + 1)), (c) => c.charCodeAt(0));
}

export class TabReader {
  /**
   * @param {object} [options]
   * @param {object} [options.chrome] the extension API (globalThis.chrome)
   * @param {string} options.readability the path of Readability.js in the extension (the
   *   manifest's page_reader.readability)
   */
  constructor({chrome = globalThis.chrome, readability} = {}) {
    this.chrome = chrome;
    this.readerFiles = [readability, 'page_reader.js'];
    this.tools = this._tools();
  }

  /** The tab id this page runs in (when it runs in a tab), so it is never read itself. */
  async _ownTabId() {
    try {
      const tab = await this.chrome.tabs.getCurrent();
      return tab ? tab.id : null;
    } catch {
      return null;
    }
  }

  _ours(tab, ownId) {
    return tab.id === ownId || (tab.url || '').startsWith(this.chrome.runtime.getURL(''));
  }

  /** The tab the user is on (see the header), or the one named by `tabId`. */
  async currentTab(tabId) {
    const {tabs} = this.chrome;
    if (Number.isInteger(tabId)) {
      try {
        return await tabs.get(tabId);
      } catch {
        throw new PageUnreadableError(`There is no tab ${tabId} (it may have been closed); ` +
                                      'list_tabs lists the open ones.', 'closed');
      }
    }
    const ownId = await this._ownTabId();
    const [active] = await tabs.query({active: true, lastFocusedWindow: true});
    if (active && !this._ours(active, ownId)) return active;
    const others = (await tabs.query({lastFocusedWindow: true}))
      .filter((t) => !this._ours(t, ownId))
      .sort((a, b) => (b.lastAccessed || 0) - (a.lastAccessed || 0));
    if (!others.length) throw new PageUnreadableError('No tab is open besides this panel.', 'no-tab');
    return others[0];
  }

  /** Run `fn(...args)` of the page reader in `tab` (injected first), main frame only. */
  async _inTab(tab, fn, args = []) {
    const why = unreadableBecause(tab.url);
    if (why) throw new PageUnreadableError(`That tab cannot be read: ${why}.`, 'browser-page');
    const {scripting} = this.chrome;
    const target = {tabId: tab.id};
    try {
      await withTimeout(scripting.executeScript({target, files: this.readerFiles}),
                        CALL_TIMEOUT_MS, 'The page');
      const [result] = await withTimeout(scripting.executeScript({
        target, func: (name, callArgs) => globalThis.pyAgentPageReader[name](...callArgs),
        args: [fn, args]}), CALL_TIMEOUT_MS, 'The page');
      if (!result || result.result == null) {
        throw new PageUnreadableError('The page reader failed in that tab; ask again.', 'failed');
      }
      return result.result;
    } catch (error) {
      throw error instanceof PageUnreadableError ? error : explain(error, tab);
    }
  }

  async readPage({tab: tabId} = {}) {
    const tab = await this.currentTab(tabId);
    // The same tab at the same address, read a moment ago (a question's read_page, then
    // its find_in_page): that read, not another pass over a page of megabytes.
    const last = this._lastRead;
    if (last && last.tabId === tab.id && last.url === tab.url && tab.url &&
        performance.now() - last.at < REREAD_AFTER_MS) {
      return last.page;
    }
    const page = await this._inTab(tab, 'extract', [{maxChars: MAX_PAGE_CHARS}]);
    if (page.unreadable === 'not-html') {
      throw new PageUnreadableError(
        `That tab shows a ${page.contentType || 'non-HTML'} file (${page.url}), not a web ` +
        'page: PDFs and other files in Chrome\'s viewers cannot be read.', 'not-html');
    }
    const read = {...page, tabId: tab.id};
    this._lastRead = {tabId: tab.id, url: tab.url, at: performance.now(), page: read};
    return read;
  }

  async selection({tab: tabId} = {}) {
    const tab = await this.currentTab(tabId);
    return {...await this._inTab(tab, 'selection'), tabId: tab.id};
  }

  async links({tab: tabId, max = 100} = {}) {
    const tab = await this.currentTab(tabId);
    return {...await this._inTab(tab, 'links', [{max}]), tabId: tab.id};
  }

  async images({tab: tabId, max = 40} = {}) {
    const tab = await this.currentTab(tabId);
    return {...await this._inTab(tab, 'images', [{max}]), tabId: tab.id};
  }

  /** One of the page's pictures (`index` in images()), read by the page reader as the
   *  page itself may read it (its own site's pictures, or those whose server allows it). */
  async image({tab: tabId, index = 1} = {}) {
    const tab = await this.currentTab(tabId);
    const found = await this._inTab(tab, 'imageData', [{index}]);
    if (found.unreadable === 'missing') {
      throw new PageUnreadableError(`The page has no picture ${index} (it shows ${found.count}).`, 'no-image');
    }
    if (found.unreadable) {
      const host = (() => { try { return new URL(found.url).host; } catch { return found.url; } })();
      const why = found.unreadable === 'cross-origin'
        ? `its site (${host}) does not let the page read it`
        : found.unreadable === 'too-large' ? 'it is larger than 10 MB' : `it could not be fetched (${found.unreadable})`;
      throw new PageUnreadableError(`That picture cannot be read: ${why}. Its alt text: ` +
                                    `“${found.alt || 'none'}”.`, 'cross-origin');
    }
    const image = Uint8Array.from(atob(found.data), (c) => c.charCodeAt(0));
    return {alt: found.alt, url: found.url, width: found.width, height: found.height, index,
            image, type: found.type, title: tab.title || '', pageUrl: tab.url || '', tabId: tab.id};
  }

  /** The visible part of the tab, as a PNG. A tab that is not the one shown in its window
   *  (the panel open in a tab of its own) is brought to the front for the capture. */
  async capture({tab: tabId} = {}) {
    const tab = await this.currentTab(tabId);
    const why = unreadableBecause(tab.url);
    if (why) throw new PageUnreadableError(`That tab cannot be captured: ${why}.`, 'browser-page');
    const {tabs} = this.chrome;
    let previous = null;
    if (!tab.active) {
      [previous] = await tabs.query({active: true, windowId: tab.windowId});
      await tabs.update(tab.id, {active: true});
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    try {
      const url = await withTimeout(tabs.captureVisibleTab(tab.windowId, {format: 'png'}),
                                    CALL_TIMEOUT_MS, 'The tab');
      return {image: dataUrlBytes(url), type: 'image/png', title: tab.title || '', url: tab.url || '',
              tabId: tab.id};
    } catch (error) {
      if (error instanceof PageUnreadableError) throw error;
      if (/activeTab|all_urls|permission/i.test(String(error?.message))) {
        throw new PageUnreadableError('This extension may capture a tab only after you open the side ' +
          'panel on it (click the py-agent button while the tab is shown), then ask again.', 'no-access');
      }
      throw explain(error, tab);
    } finally {
      if (previous) await tabs.update(previous.id, {active: true}).catch(() => {});
    }
  }

  /** The open tabs: those the extension may see get their title and URL. */
  async listTabs() {
    const ownId = await this._ownTabId();
    const current = await this.currentTab().catch(() => null);
    const all = (await this.chrome.tabs.query({})).filter((t) => !this._ours(t, ownId));
    const tabs = all.filter((t) => t.url || t.title).map((t) => ({
      tab: t.id, title: t.title || '', url: t.url || '', current: !!current && t.id === current.id,
    }));
    return {tabs, hidden: all.length - tabs.length};
  }

  /** Scroll `tabId` (default: the current tab) to `quote` and highlight it. */
  async showQuote(quote, tabId) {
    const tab = await this.currentTab(tabId);
    try {
      await this.chrome.scripting.insertCSS({target: {tabId: tab.id}, css: HIGHLIGHT_CSS});
    } catch (error) {
      throw explain(error, tab);
    }
    return {...await this._inTab(tab, 'show', [quote]), tabId: tab.id};
  }

  /** The raw tools, for the page tools host (register each with {source: 'tab'}). */
  _tools() {
    const tabInput = {type: 'object', properties: {tab: {
      type: 'integer', description: 'a tab id from tab_list; the tab the user is on if left out'}}};
    const readOnly = {readOnlyHint: true};
    return [
      {name: 'tab_read_page', annotations: readOnly, inputSchema: tabInput,
       description: 'The main text of the web page the user is looking at, with its title and URL.',
       execute: (input) => this.readPage(input || {})},
      {name: 'tab_selection', annotations: readOnly, inputSchema: tabInput,
       description: 'The text the user has selected on the page they are looking at.',
       execute: (input) => this.selection(input || {})},
      {name: 'tab_links', annotations: readOnly, inputSchema: tabInput,
       description: 'The links on the page the user is looking at: their text and address.',
       execute: (input) => this.links(input || {})},
      {name: 'tab_list', annotations: readOnly, inputSchema: {type: 'object', properties: {}},
       description: 'The browser tabs that are open: their title, address and tab id.',
       execute: () => this.listTabs()},
      {name: 'tab_images', annotations: readOnly, inputSchema: tabInput,
       description: 'The pictures on the page the user is looking at: their alt text and address.',
       execute: (input) => this.images(input || {})},
      {name: 'tab_image', annotations: readOnly,
       inputSchema: {type: 'object', properties: {...tabInput.properties, index: {type: 'integer'}}},
       description: 'One picture of the page the user is looking at, by its number in tab_images.',
       execute: (input) => this.image(input || {})},
      {name: 'tab_capture', annotations: readOnly, inputSchema: tabInput,
       description: 'A screenshot of the visible part of the page the user is looking at.',
       execute: (input) => this.capture(input || {})},
    ];
  }
}
