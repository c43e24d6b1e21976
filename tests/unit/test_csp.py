"""The Content-Security-Policy of each home, exactly: the development server's headers
(a page and anything else), the static build's (a page's header and its <meta>, and the
service worker's for everything else), and the extension's manifest. The expected
strings are what the three builders gave before the policy was built from data in one
place (serving/headers.py); the test holds them to it. Then the policy as data: read
from its text, a source added, the app's policy, and the <meta> and extension forms."""

from __future__ import annotations

import pytest

from serving.extension_build import extension_policy
from serving.headers import DIRECTIVES, Policy, content_security_policy
from serving.http_server import AppRequestHandler
from serving.model_server import model_server_from_args
from serving.page_models import page_models_from_args
from serving.static_build import meta_policy, other_policy, page_policy
from serving.tool_servers import ToolServers

PAGE = ('<!doctype html><script>start()</script><script src="x.js"></script>'
        '<script type="module">go()</script>')
HASHES = ("'sha256-DIm7WJS6ZKDYe5qFLPy+h4JFI9Bol5QmYC57mt3Fb00=' "
          "'sha256-5KYv+PUboo5h+0+YAtGRPbwv5d/QxzHslP4YGnUaxRw='")
TAIL = ("img-src 'self' data: blob:; media-src 'self' blob:; font-src 'self'; object-src 'none'; base-uri 'none'; "
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
        "static_other_all": other_policy(direct, models),
        "extension": extension_policy(),
        "extension_all": extension_policy(direct, models),
    }


@pytest.mark.parametrize("name", EXPECTED)
def test_each_homes_policy_is_what_it_was(policies, name):
    assert policies[name] == EXPECTED[name]



@pytest.mark.parametrize("name", EXPECTED)
def test_a_policy_reads_back_from_its_text(name):
    assert str(Policy.parse(EXPECTED[name])) == EXPECTED[name]


def test_parsing_takes_names_in_any_case_the_first_of_a_directive_and_skips_empty_parts():
    parsed = Policy.parse(" Default-Src 'self' ;; img-src data: ; img-src *; ")
    assert parsed.directives == (("default-src", ("'self'",)), ("img-src", ("data:",)))
    assert str(parsed) == "default-src 'self'; img-src data:"


def test_adding_a_source_appends_it_once_and_leaves_the_rest():
    base = content_security_policy()
    added = base.adding("connect-src", ["http://127.0.0.1:11434", "http://127.0.0.1:11434",
                                        "'self'"])
    assert added.sources("connect-src") == ("'self'", "http://127.0.0.1:11434")
    assert [d for d in added.directives if d[0] != "connect-src"] == \
        [d for d in base.directives if d[0] != "connect-src"]
    assert base.sources("connect-src") == ("'self'",)   # policies are values
    assert Policy.parse("default-src 'self'").adding("img-src", ["data:"]).directives[-1] == \
        ("img-src", ("data:",))


def test_the_app_policy_takes_hashes_and_origins_where_they_belong():
    policy = content_security_policy(script_hashes=["sha256-abc"],
                                     connect=["https://tools.example.test"])
    assert policy.sources("script-src") == ("'self'", "'wasm-unsafe-eval'", "'sha256-abc'")
    assert policy.sources("connect-src") == ("'self'", "https://tools.example.test")
    assert [name for name, _ in policy.directives] == list(DIRECTIVES)


def test_the_meta_and_extension_forms_drop_what_they_cannot_carry():
    policy = Policy.parse("default-src 'self'; worker-src 'self' blob:; sandbox; "
                          "report-uri /r; frame-ancestors 'none'")
    assert policy.meta() == "default-src 'self'; worker-src 'self' blob:"
    assert policy.extension() == "default-src 'self'; worker-src 'self'; sandbox; report-uri /r"
