// The side panel's tab reader (tab_reader.js): its raw tools go to the page tools host
// that index.html started (globalThis.pyAgentPageTools, web/page_tools.js), with source
// 'tab', for the agent worker; the answer's quotes call showQuote. Readability's path
// comes from the build's manifest.
import {TabReader} from './tab_reader.js';

globalThis.pyAgentTabReader = fetch('vendor/manifest.json')
  .then((response) => response.json())
  .then((manifest) => {
    const reader = new TabReader({readability: manifest.page_reader.readability});
    for (const tool of reader.tools) globalThis.pyAgentPageTools.register(tool, {source: 'tab'});
    return reader;
  });
