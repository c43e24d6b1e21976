"""What ``serve.py`` does, one job per module. Part of the app, not of the library: never
in the wheel.

- ``prepare``: make ``web/vendor/`` complete (runtimes, wheels, tool modules, snapshot,
  manifest), idempotently;
- ``runtimes``: the npm browser runtimes, copied into ``web/vendor/`` (the MCP client SDK
  bundled with esbuild from ``mcp_client_entry.mjs``);
- ``vendored_wheels``: micropip's and py_agent's dependencies' wheels, fetched with pip;
- ``wheel``: the py_agent wheel, built by the project's build backend;
- ``page_tool_modules``: the tool modules the page's worker loads, zipped, checked and
  given their dependencies;
- ``page_models``: the GGUF models (``--gguf``) the page offers to run in itself;
- ``tool_servers``: the tool servers (``--mcp``) the page connects to;
- ``boot_snapshot`` (with ``make_boot_snapshot.mjs``): the memory snapshot browsers boot
  from, made under Node.js;
- ``manifest``: what the worker loads, as prepared and as a site hands it out;
- ``http_server``: the development server, with ``headers`` (CSP, isolation, caching),
  ``model_server`` (``--model-url``, its proxy) and ``ui_bundle`` (the UI in one file);
- ``app_files``: the files every build ships, copied from one preparation;
- ``static_build``: ``--build DIR``, the app as a static site, with the service worker
  and offline page of ``offline/``;
- ``extension_build``: ``--extension DIR``, the app as a Chrome extension (side panel)
  with the page tools of ``extension/``, and its zip;
- ``paths`` and ``common``: where files live; how the modules speak and write files.
"""
