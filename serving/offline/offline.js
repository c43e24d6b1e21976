// A static build's pages load this (serve.py --build adds it to each): it registers the
// build's service worker (service_worker.js, beside this file, for the whole build
// folder), which keeps the site's files so that later visits work without a network.
// The development server has neither file: nothing is cached behind a developer's back.
(() => {
  if (!('serviceWorker' in navigator)) return;
  const root = new URL('./', document.currentScript.src);
  // After the page's own loading, so that keeping the files does not slow its start.
  addEventListener('load', () => {
    navigator.serviceWorker.register(new URL('service_worker.js', root), {scope: root.href})
      .catch((error) => console.warn(`[offline] no service worker, so no offline use: ${error}`));
  });
})();
