// Where the site is: the folder above this one (a site serves worker/ beside vendor/ and
// the page), whatever path it lives at. The manifest's URLs are relative to it, so the
// same files work at / (serve.py) and under any path (a static build, e.g. /my-agent/).
export const SITE_ROOT = new URL('../', import.meta.url).href;

/** The absolute URL of a URL of the manifest (relative to the site, or absolute). */
export function siteURL(url) {
  return new URL(url, SITE_ROOT).href;
}
