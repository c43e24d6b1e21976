"""The start-up budget, read from the HTML: what each home of the page (serve.py's, the
static build's, the extension's side panel) loads before PyScript starts its UI is on
the allow-list of tests/boot_budget.py, static imports followed. The browser's side of
the same rule is tests/e2e/test_boot_budget.py."""

from __future__ import annotations

import pytest

from serving.extension_build import side_panel_page
from serving.static_build import OFFLINE_SCRIPT, add_to_page
from tests.boot_budget import (ALLOWED, allowed, not_allowed_message, page_scripts,
                               read_web, static_imports)

INDEX = read_web("index.html")


def served():
    return INDEX, read_web


def static_build():
    return add_to_page(INDEX, "default-src 'self'", OFFLINE_SCRIPT), read_web


def side_panel():
    html, moved = side_panel_page(INDEX)
    return html, lambda path: moved[path] if path in moved else read_web(path)


HOMES = {"serve.py's page": served, "the static build's page": static_build,
         "the extension's side panel": side_panel}


@pytest.mark.parametrize("home", HOMES)
def test_each_home_loads_only_allowed_scripts_before_pyscript(home):
    html, read = HOMES[home]()
    loaded = page_scripts(html, read)
    assert "llm_host.js" in loaded   # the check sees the page's scripts at all
    extra = [path for path in loaded if not allowed(path)]
    assert not extra, not_allowed_message(f"{home} (web/index.html, web/ui.json)", extra)


def test_every_allowed_script_is_one_a_home_loads():
    # An entry nothing loads any more is taken off, so that the list stays the budget.
    loaded = {path for home in HOMES.values() for path in page_scripts(*home())}
    assert sorted(set(ALLOWED) - loaded) == []


def test_a_script_added_before_pyscript_is_named_with_what_it_imports():
    # As the page was before issue 41: the in-page models' JavaScript loaded up front.
    html = INDEX.replace(
        '<script type="module" src="vendor/pyscript',
        "<script type=\"module\">import {PageModels} from './page_model/page_models.js';"
        "</script>\n  <script type=\"module\" src=\"vendor/pyscript", 1)
    extra = [path for path in page_scripts(html, read_web) if not allowed(path)]
    assert extra == ["page_model/page_models.js", "page_model/language_model.js",
                     "page_model/model_store.js", "page_model/gguf_header.js"]
    message = not_allowed_message("the page", extra)
    assert "page_model/page_models.js" in message and "dynamic import()" in message


def test_an_import_added_to_an_allowed_script_is_followed():
    def read(path):
        if path == "llm_host.js":
            return "import {Engine} from './page_model/engine.js';\n" + read_web(path)
        return read_web(path)

    extra = [path for path in page_scripts(INDEX, read) if not allowed(path)]
    assert extra[0] == "page_model/engine.js" and "page_model/gguf_header.js" in extra


def test_static_imports_are_told_from_dynamic_ones_and_strings():
    source = """import {a} from './a.js';
import './b.js';
import {
  c,
} from '../c.js';
export * from './d.js';
export const NAME = './not_a_module.js';
const later = await import('./e.js');
// import {f} from './f.js';  (a comment)
"""
    assert static_imports(source) == ["./a.js", "./b.js", "../c.js", "./d.js"]
