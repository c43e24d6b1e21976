// A static build's service worker: serve.py --build writes it as service_worker.js with
// BUILD above (this build's version, its files, and the response headers the build asks
// for), registered by offline.js.
//
// Installing keeps every file of the build (but source maps and the boot snapshot, which
// the agent's worker keeps on its own) in a cache of this version; from then on the site
// is served from there, so a visit works without a network and always sees one build
// whole. Each response gets the headers a static host cannot send: the page's complete
// Content-Security-Policy (frame-ancestors included, which a <meta> cannot say), the
// workers' own, and, when the build opted in (--cross-origin-isolation), the headers that
// make the site cross-origin isolated. A new build installs beside the old one and takes
// over once no page of the old one is open; the old cache is then deleted.
const SCOPE = self.registration.scope;
const CACHE_PREFIX = `py-agent-site ${SCOPE} `;
const CACHE = CACHE_PREFIX + BUILD.version;
const FILES = new Set(BUILD.files);

const urlOf = (path) => new URL(path, SCOPE).href;

self.addEventListener('install', (event) => {
  event.waitUntil(keepFiles());
});

async function keepFiles() {
  const cache = await caches.open(CACHE);
  const kept = new Set((await cache.keys()).map((request) => request.url));
  await Promise.all(BUILD.files.filter((path) => !kept.has(urlOf(path))).map(async (path) => {
    // vendor/ is versioned (a new version is a new path): the HTTP cache may answer.
    const response = await fetch(urlOf(path),
                                 {cache: path.startsWith('vendor/') ? 'default' : 'no-cache'});
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
    await cache.put(urlOf(path), response);
  }));
}

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith(CACHE_PREFIX) && name !== CACHE) await caches.delete(name);
    }
  })());
});

self.addEventListener('fetch', (event) => {
  const {request} = event;
  if (request.method !== 'GET' || !request.url.startsWith(SCOPE)) return;
  event.respondWith(respond(request));
});

/** The build's path of a URL in scope ('' and folders mean their index.html). */
function pathOf(url) {
  const {pathname} = new URL(url);
  const path = decodeURIComponent(pathname.slice(new URL(SCOPE).pathname.length));
  return path === '' || path.endsWith('/') ? `${path}index.html` : path;
}

async function respond(request) {
  const path = pathOf(request.url);
  if (FILES.has(path)) {
    // caches.match, not caches.open(...).match: a lookup must not make the cache again
    // once it is deleted (the development server's retiring worker deletes it).
    const kept = await caches.match(urlOf(path), {cacheName: CACHE});
    if (kept) return withHeaders(kept, path);
  }
  return withHeaders(await fetch(request), path);
}

function withHeaders(response, path) {
  // Only this site's own, plain responses (a redirect must reach the page as one).
  if (response.type !== 'basic' || response.redirected) return response;
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(BUILD.headers.all)) headers.set(name, value);
  const policy = path.endsWith('.html') ? BUILD.headers.pages[path] : BUILD.headers.other;
  if (policy) headers.set('Content-Security-Policy', policy);
  return new Response(response.body, {status: response.status, statusText: response.statusText,
                                      headers});
}
