#!/usr/bin/env python3
"""Prepare py-agent's browser runtime and serve the demo page.

    python serve.py                  # prepare, then serve http://127.0.0.1:8000/
    python serve.py --port 8765      # another port (--host too)
    python serve.py --tools my_tools.py      # your tool module too (repeatable)
    python serve.py --site my_site   # your own page at / (using /agent.js)
    python serve.py --model-url http://localhost:11434/v1 --model gemma3:4b
                                     # an OpenAI-compatible server too (serving/model_server.py)
    python serve.py --gguf gemma-3-1b-it-Q4_K_M.gguf
                                     # a model the page runs itself (repeatable; a file or
                                     # a URL: serving/page_models.py, docs/page-model.md)
    python serve.py --prepare-only   # set everything up, serve nothing (tests, CI)
    python serve.py --build site     # a static site in site/ for any web server, any path
                                     # (serving/static_build.py; docs/publish.md)
    python serve.py --extension ext  # a Chrome extension in ext/ (side panel) and ext.zip
                                     # (serving/extension_build.py; docs/extension.md)

This file is only the command line. The work is done in ``serving/``: preparation of
``web/vendor/`` (serving/prepare.py, idempotent and offline once done), the development
server with the app's headers (serving/http_server.py), and the static build.

Any CPython >= 3.11 runs it, nothing installed: py_agent (which checks the tool modules)
imports its few pure-Python dependencies from the wheels preparation vendors for the page
(serving/vendored_wheels.py). ``--help`` answers before anything is set up.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MINIMUM_PYTHON = (3, 11)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Prepare py-agent's runtime and serve the page.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--tools", action="append", default=[], metavar="PATH",
                        help="a tool module (a .py file or a package folder) whose @tool "
                             "functions the agent gets besides the demo's; repeatable")
    parser.add_argument("--site", metavar="DIR",
                        help="serve DIR at / in front of the demo page: your own page, "
                             "using /agent.js (see README)")
    parser.add_argument("--model-url", metavar="URL",
                        help="an OpenAI-compatible server (Ollama, llama.cpp, LM Studio, vLLM) "
                             "the page may use, e.g. http://localhost:11434/v1; Gemini Nano "
                             "stays the default where Chrome has it")
    parser.add_argument("--model", metavar="NAME",
                        help="the model name on that server (default: the first it lists)")
    parser.add_argument("--context-window", type=int, metavar="TOKENS",
                        help="the model's context window (default: asked from the server)")
    parser.add_argument("--model-proxy", action="store_true",
                        help="reach the server through this one (/model/), so it needs no "
                             "CORS; always so when PY_AGENT_API_KEY or OPENAI_API_KEY is set")
    parser.add_argument("--mcp", action="append", default=[], metavar="URL",
                        help="a tool server (MCP over Streamable HTTP, e.g. "
                             "http://localhost:3001/mcp) the page connects to; repeatable "
                             "(with serve.py's server or --extension, not --build)")
    parser.add_argument("--gguf", action="append", default=[], metavar="PATH_OR_URL",
                        help="a GGUF model the page offers to run itself (llama.cpp in "
                             "WebAssembly; the browser downloads it once and keeps it): a "
                             "local file, served at /models/<name>, or a URL whose server "
                             "allows CORS; repeatable")
    parser.add_argument("--prepare-only", action="store_true",
                        help="prepare web/vendor and exit without serving")
    parser.add_argument("--build", metavar="DIR",
                        help="write the app as a static site into DIR (new, empty or an "
                             "earlier build) instead of serving it: any web server can host "
                             "it, at any path, without special headers (docs/publish.md); "
                             "--tools, --site and --model-url go into it")
    parser.add_argument("--cross-origin-isolation", action="store_true",
                        help="with --build: make the site cross-origin isolated from the "
                             "second visit on (its service worker adds COOP/COEP), for "
                             "features that need SharedArrayBuffer; nothing does today")
    parser.add_argument("--extension", metavar="DIR",
                        help="write the app as an unpacked Chrome extension into DIR (new, "
                             "empty or an earlier one), its side panel the chat with the page "
                             "tools, and DIR.zip for the Chrome Web Store (docs/extension.md); "
                             "--tools, --model-url and --gguf go into it")
    parser.add_argument("--extension-site", action="append", default=[], metavar="PATTERN",
                        help="with --extension: a site the extension may read without the user "
                             "opening the panel on the tab first (a host permission, e.g. "
                             "'https://docs.example.org/*'); repeatable")
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)   # --help has answered and exited by now
    if sys.version_info < MINIMUM_PYTHON:
        print(f"[serve] error: Python {'.'.join(map(str, MINIMUM_PYTHON))} or newer is "
              f"needed; this is {sys.version.split()[0]}", file=sys.stderr)
        return 1
    if str(ROOT) not in sys.path:   # serving/ and py_agent/ live next to this file
        sys.path.insert(0, str(ROOT))
    # Imported here, after the arguments: serving imports py_agent, whose dependencies
    # may first have to be put on the path.
    from serving.common import PrepareError, say
    from serving.vendored_wheels import make_dependencies_importable
    try:
        make_dependencies_importable()
    except PrepareError as error:
        print(f"[serve] error: {error}", file=sys.stderr)
        return 1
    from serving.http_server import make_server
    from serving.model_server import model_server_from_args, probe_model_server
    from serving.page_models import page_models_from_args
    from serving.paths import CACHE
    from serving.prepare import prepare
    from serving.page_tool_modules import tool_module_path
    from serving.tool_servers import tool_servers_from_args

    try:
        tools = [tool_module_path(path) for path in args.tools]
        site = Path(args.site).resolve() if args.site else None
        if site is not None and not site.is_dir():
            raise PrepareError(f"--site {args.site}: no such folder")
        if (args.model or args.context_window or args.model_proxy) and not args.model_url:
            raise PrepareError("--model, --context-window and --model-proxy go with --model-url")
        if args.cross_origin_isolation and not args.build:
            raise PrepareError("--cross-origin-isolation goes with --build (serve.py's own "
                               "server always isolates the page)")
        if args.build and args.prepare_only:
            raise PrepareError("--build and --prepare-only: choose one")
        if args.extension and (args.build or args.prepare_only or args.site
                               or args.cross_origin_isolation):
            raise PrepareError("--extension goes without --build, --prepare-only, --site "
                               "and --cross-origin-isolation")
        if args.extension_site and not args.extension:
            raise PrepareError("--extension-site goes with --extension")
        model_server = model_server_from_args(args.model_url, args.model, args.context_window,
                                              proxy=args.model_proxy) if args.model_url else None
        page_models = page_models_from_args(args.gguf, hash_cache=CACHE / "gguf-sha256.json")
        tool_servers = tool_servers_from_args(args.mcp)
        if args.mcp and args.build:
            raise PrepareError("--mcp goes with serve.py's own server or --extension (a "
                               "static build's page is not given tool servers yet)")
        for note in page_models.notes:
            say(note)
        if args.build:
            return build(Path(args.build), tools, site, model_server,
                         args.cross_origin_isolation, page_models)
        if args.extension:
            return extension(Path(args.extension), tools, model_server, page_models,
                             args.extension_site, tool_servers)
        prepare(tools)
    except PrepareError as error:
        print(f"[serve] error: {error}", file=sys.stderr)
        return 1
    if args.prepare_only:
        return 0
    try:
        server = make_server(args.host, args.port, quiet=args.quiet, tools=tools, site=site,
                             model_server=model_server, page_models=page_models,
                             tool_servers=tool_servers)
    except OSError as error:
        print(f"[serve] error: cannot listen on {args.host}:{args.port}: {error}",
              file=sys.stderr)
        return 1
    except PrepareError as error:
        print(f"[serve] error: {error}", file=sys.stderr)
        return 1
    served = f"{site} in front of web/" if site else "web/"
    say(f"serving {served} (and worker/ at /worker/) on {server.url}/")
    for note in probe_model_server(model_server, server.url) if model_server else ():
        say(note)
    say(f"open {server.url}/ in Chrome; Ctrl-C stops")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        say("stopped")
    finally:
        server.server_close()
    return 0


def build(folder: Path, tools: list[Path], site: Path | None, model_server, isolation: bool,
          page_models=None) -> int:
    """--build: write the static site and say where it is and how to try it."""
    from serving.common import say
    from serving.static_build import build_site

    report = build_site(folder, tools=tools, site=site, model_server=model_server,
                        isolation=isolation, page_models=page_models)
    say(f"built {report.folder}: {report.files} files, {report.bytes / 1e6:.1f} MB "
        f"({report.kept_bytes / 1e6:.1f} MB kept by browsers for offline visits) in "
        f"{report.seconds:.1f} s")
    if model_server is not None:
        say(f"the page reaches {model_server.base_url} directly: that server must allow the "
            "site's origin (CORS)")
    say(f"try it: python -m http.server --directory {folder} 8080, then open "
        "http://localhost:8080/ (docs/publish.md says how to put it online)")
    return 0


def extension(folder: Path, tools: list[Path], model_server, page_models,
              sites: list[str], tool_servers=None) -> int:
    """--extension: write the extension and its zip, and say how to load it."""
    from serving.common import say
    from serving.extension_build import build_extension

    report = build_extension(folder, tools=tools, model_server=model_server,
                             page_models=page_models, sites=sites, tool_servers=tool_servers)
    say(f"built {report.folder}: {report.files} files, {report.bytes / 1e6:.1f} MB, and "
        f"{report.zip} ({report.zip_bytes / 1e6:.1f} MB, for the Chrome Web Store) in "
        f"{report.seconds:.1f} s")
    if tool_servers is not None and tool_servers.urls:
        say(f"the panel connects to {', '.join(tool_servers.urls)} at start (a host permission "
            "each, so they need not allow CORS)")
    say(f"try it: open chrome://extensions, turn on Developer mode, Load unpacked -> "
        f"{report.folder}; then click py-agent's button on any page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
