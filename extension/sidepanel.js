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

// A quote of an answer (marked by ui/page_quotes.py) shows its passage in the tab.
addEventListener('click', async (event) => {
  const button = event.target.closest?.('[data-testid="page-quote"]');
  if (!button) return;
  button.dataset.state = 'looking';
  try {
    const reader = await globalThis.pyAgentTabReader;
    const shown = await reader.showQuote(button.dataset.quote);
    button.dataset.state = shown.found ? 'shown' : 'not-found';
    button.title = shown.found ? 'Shown on the page' : 'This passage is not on the page now';
  } catch (error) {
    button.dataset.state = 'failed';
    button.title = error.message;
  }
});
