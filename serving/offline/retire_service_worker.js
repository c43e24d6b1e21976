// serve.py's development server answers a static build's service_worker.js with this one.
// A browser that visited a build at this origin before (say both on localhost:8000) still
// has that build's service worker, which would go on serving the old build's files in
// front of the development server. On its next check for an update, the browser gets
// this script instead: it takes over at once, deletes the build's files, unregisters
// itself and reloads the pages it held, which then come from the development server.
// It claims every page in its scope before reloading them: a page whose load was still
// starting when the update check ended is not yet among the pages a new worker takes over,
// and would stay with the old build's copy. That page registers the build's worker again
// once loaded (offline.js), gets this script again, and this time is claimed and reloaded.
self.addEventListener('install', () => self.skipWaiting());

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    const prefix = `py-agent-site ${self.registration.scope} `;
    for (const name of await caches.keys()) {
      if (name.startsWith(prefix)) await caches.delete(name);
    }
    await self.clients.claim();
    await self.registration.unregister();
    for (const client of await self.clients.matchAll({type: 'window'})) {
      client.navigate(client.url);
    }
  })());
});
