// The side panel's page tools (page_tools.js), for the agent worker to call and the
// answer's quotes to scroll to; Readability's path comes from the build's manifest.
import {PageTools} from './page_tools.js';

globalThis.pyAgentPageTools = fetch('vendor/manifest.json')
  .then((response) => response.json())
  .then((manifest) => new PageTools({readability: manifest.page_reader.readability}));
