// A static build's pages load this (serve.py --build adds it to each): it registers the
// build's service worker (service_worker.js, beside this file, for the whole build
// folder), which keeps the site's files so that later visits work without a network.
// The development server has neither file: nothing is cached behind a developer's back;
// it answers service_worker.js with one that retires a build's worker found at its
// origin (retire_service_worker.js), which asks this page to reload from the server.
(() => {
  if (!('serviceWorker' in navigator)) return;
  const root = new URL('./', document.currentScript.src);
  navigator.serviceWorker.addEventListener('message', (event) => {
    if (event.data?.type === 'py-agent-service-worker-retired') location.reload();
  });
  navigator.serviceWorker.startMessages();
  // After the page's own loading, so that keeping the files does not slow its start.
  addEventListener('load', () => {
    navigator.serviceWorker.register(new URL('service_worker.js', root), {scope: root.href})
      // Check for a new build (or a retirement) now, not when the browser gets to it.
      .then((registration) => registration.update().catch(() => {}))   // offline: no check
      .catch((error) => console.warn(`[offline] no service worker, so no offline use: ${error}`));
  });
})();
