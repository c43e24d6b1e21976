"""The Content-Security-Policy of each home, exactly: the development server's headers
(a page and anything else), the static build's (a page's header and its <meta>, and the
service worker's for everything else), and the extension's manifest. The expected
strings are what the three builders gave before the policy was built from data in one
place (serving/headers.py); the test holds them to it."""

from __future__ import annotations

import pytest

from serving.extension_build import extension_policy
from serving.http_server import AppRequestHandler
from serving.model_server import model_server_from_args
from serving.page_models import page_models_from_args
from serving.static_build import meta_policy, page_policy, with_model_server
from serving.headers import CSP
from serving.tool_servers import ToolServers

PAGE = ('<!doctype html><script>start()</script><script src="x.js"></script>'
        '<script type="module">go()</script>')
HASHES = ("'sha256-DIm7WJS6ZKDYe5qFLPy+h4JFI9Bol5QmYC57mt3Fb00=' "
          "'sha256-5KYv+PUboo5h+0+YAtGRPbwv5d/QxzHslP4YGnUaxRw='")
TAIL = ("img-src 'self' data:; font-src 'self'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'")


def policy(*, scripts: str = "", worker: str = "'self' blob:", connect: str = "",
           framing: bool = True) -> str:
    return (f"default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{scripts}; "
            f"style-src 'self'; worker-src {worker}; connect-src 'self'{connect}; {TAIL}"
            + ("; frame-ancestors 'none'" if framing else ""))


EXPECTED = {
    "dev_page": policy(scripts=" " + HASHES),
    "dev_other": policy(),
    # the development server has always listed the tool servers, the --gguf origins and
    # the model server in this order
    "dev_page_all": policy(scripts=" " + HASHES, connect=" http://localhost:3001 "
                           "https://tools.example.test https://models.example.test "
                           "http://127.0.0.1:11434"),
    "dev_other_all": policy(connect=" http://localhost:3001 https://tools.example.test "
                            "https://models.example.test http://127.0.0.1:11434"),
    "dev_other_proxied": policy(),
    "static_page": policy(scripts=" " + HASHES),
    "static_page_all": policy(scripts=" " + HASHES,
                              connect=" http://127.0.0.1:11434 https://models.example.test"),
    "static_meta_all": policy(scripts=" " + HASHES, framing=False,
                              connect=" http://127.0.0.1:11434 https://models.example.test"),
    "static_other_all": policy(connect=" http://127.0.0.1:11434 https://models.example.test"),
    "extension": policy(worker="'self'", framing=False),
    "extension_all": policy(worker="'self'", framing=False,
                            connect=" http://127.0.0.1:11434 https://models.example.test"),
}


@pytest.fixture(scope="module")
def policies(tmp_path_factory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("site")
    page = site / "index.html"
    page.write_text(PAGE)
    direct = model_server_from_args("http://127.0.0.1:11434/v1", environ={})
    proxied = model_server_from_args("http://127.0.0.1:11434/v1", proxy=True, environ={})
    models = page_models_from_args(["https://models.example.test/m/tiny.gguf",
                                    "https://models.example.test/other.gguf"], probe=False)
    tools = ToolServers(("http://localhost:3001/mcp", "https://tools.example.test/mcp"))

    def dev(path: str, **parts) -> str:
        handler = AppRequestHandler.__new__(AppRequestHandler)   # no request needed
        handler.path, handler.mounts = path, {"/": site}
        for name, value in parts.items():
            setattr(handler, name, value)
        return handler.content_security_policy()

    return {
        "dev_page": dev("/index.html"),
        "dev_other": dev("/worker.js"),
        "dev_page_all": dev("/index.html", model_server=direct, page_models=models,
                            tool_servers=tools),
        "dev_other_all": dev("/worker.js", model_server=direct, page_models=models,
                             tool_servers=tools),
        "dev_other_proxied": dev("/worker.js", model_server=proxied),
        "static_page": page_policy(page),
        "static_page_all": page_policy(page, direct, models),
        "static_meta_all": meta_policy(page_policy(page, direct, models)),
        "static_other_all": with_model_server(CSP, direct, models),
        "extension": extension_policy(),
        "extension_all": extension_policy(direct, models),
    }


@pytest.mark.parametrize("name", EXPECTED)
def test_each_homes_policy_is_what_it_was(policies, name):
    assert policies[name] == EXPECTED[name]

