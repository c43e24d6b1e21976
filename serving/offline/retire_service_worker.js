// serve.py's development server answers a static build's service_worker.js with this one.
// A browser that visited a build at this origin before (say both on localhost:8000) still
// has that build's service worker, which would go on serving the old build's files in
// front of the development server. On its next check for an update, the browser gets
// this script instead, and it retires the build's worker as soon as it is installed:
// it deletes the build's files, unregisters (later loads go to the network, that is to
// the development server) and tells the pages of its scope to reload.
//
// It does not wait for its activation: the browser activates a new worker only once the
// old one has no fetch in flight, and a page that keeps one open (a long download, a
// streamed answer) would keep the old build for as long as it does.
// Pages of a build that listens (offline.js) reload on the message; pages of older builds
// are reloaded on activation, after claiming them (a page whose load had begun when the
// update check ended is not yet among the pages a new worker holds).
const RETIRED = 'py-agent-service-worker-retired';

async function deleteBuildFiles() {
  const prefix = `py-agent-site ${self.registration.scope} `;
  for (const name of await caches.keys()) {
    if (name.startsWith(prefix)) await caches.delete(name);
  }
}

async function unregisterAndReload() {
  await self.registration.unregister();
  for (const client of await self.clients.matchAll({type: 'window', includeUncontrolled: true})) {
    if (client.url.startsWith(self.registration.scope)) client.postMessage({type: RETIRED});
  }
}

self.addEventListener('install', (event) => {
  event.waitUntil(deleteBuildFiles().then(() => self.skipWaiting()));
  // Not waited for: unregistering is a job of the registration's own queue, which runs
  // only once this installation (a job of that queue too) has ended.
  unregisterAndReload().catch((error) => console.warn(`[retire] ${error}`));
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    await deleteBuildFiles();
    await self.registration.unregister();
    await self.clients.claim();
    for (const client of await self.clients.matchAll({type: 'window'})) {
      client.navigate(client.url);
    }
  })());
});
