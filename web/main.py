# The page's Python (MicroPython via PyScript): it wires the parts of the chat UI in
# ui/ together and takes over the agent worker that index.html started.
#
# The agent itself runs in the worker; nothing here thinks. Each part of the page is a
# module of its own (status, boot progress, Chrome's model, chat, trace, memory,
# sessions, tools) and they talk through the small hub in ui/app.py.
import json
import os
import sys

from pyscript import fetch, window


async def unpack_ui_bundle():
    """Write the ui/ modules, which come in one request (serve.py's ui-bundle.json,
    preloaded by index.html; relative, so the page works at any path), into the file
    system, for import."""
    response = await fetch("ui-bundle.json")
    if not response.ok:
        raise RuntimeError("GET ui-bundle.json: HTTP %s" % response.status)
    try:
        os.mkdir("ui")
    except OSError:
        pass   # there already
    for name, source in json.loads(await response.text()).items():
        with open("ui/" + name, "w") as module:
            module.write(source)


await unpack_ui_bundle()  # noqa: F704 (PyScript runs this file with top-level await)

from ui import (approval, boot_progress, chat, gemini_nano, layout, model_choice, page_models,
                status, tabs)
from ui.dom import keep
from ui.link import llm_host, take_over_worker

runtime = "%s %s" % (sys.implementation.name,
                     ".".join(str(n) for n in sys.implementation.version[:3]))
status.status.setAttribute("data-ui-runtime", runtime)
status.status.setAttribute("data-ui-ms", str(int(window.performance.now())))  # UI is up

layout.start()
status.start(runtime)
boot_progress.start()
gemini_nano.start()   # before chat: a Send may have to start the model's download
model_choice.start()
page_models.start()   # after model_choice: it acts on the model the worker describes
chat.start(llm_host())
tabs.start()
approval.start()
take_over_worker()


def start_later():
    # The side panels (sessions, memory with the user profile, tools: beside the chat, or in the drawer on
    # phones) show nothing until the agent is ready, and the tools panel sits below the
    # fold: they are imported and started after the page has painted and the worker is
    # taken over. Each catches up on a boot that finished before it started.
    from ui import attach, memory, profile, sessions, tool_servers, tools_panel
    attach.start()
    memory.start()
    profile.start()
    sessions.start()
    tools_panel.start()
    tool_servers.start()


window.setTimeout(keep(start_later), 0)
