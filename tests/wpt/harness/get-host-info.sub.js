/*
 * get_host_info() for the runner's one server: the page's own origin, and the same
 * port under "localhost", which is another site (and origin) than 127.0.0.1. WPT
 * substitutes real hosts into its get-host-info.sub.js; this project's own version
 * derives them from the page's location.
 */
function get_host_info() {
  'use strict';
  const { protocol, port } = location;
  const origin = `${protocol}//127.0.0.1:${port}`;
  const otherSite = `${protocol}//localhost:${port}`;
  return {
    HTTP_ORIGIN: origin, HTTPS_ORIGIN: origin, ORIGIN: origin,
    HTTP_REMOTE_ORIGIN: otherSite, HTTPS_REMOTE_ORIGIN: otherSite, REMOTE_ORIGIN: otherSite,
    HTTP_NOTSAMESITE_ORIGIN: otherSite, HTTPS_NOTSAMESITE_ORIGIN: otherSite,
  };
}
