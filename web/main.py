# The page's Python (MicroPython via PyScript): it wires the parts of the chat UI in
# ui/ together and takes over the agent worker that index.html started.
#
# The agent itself runs in the worker; nothing here thinks. Each part of the page is a
# module of its own (status, chat, trace, memory, sessions, tools) and they talk through
# the small hub in ui/app.py.
import sys

from pyscript import window

from ui import chat, layout, memory, model_choice, sessions, status, tabs, tools_panel
from ui.link import take_over_worker

runtime = "%s %s" % (sys.implementation.name,
                     ".".join(str(n) for n in sys.implementation.version[:3]))
status.status.setAttribute("data-ui-runtime", runtime)
status.status.setAttribute("data-ui-ms", str(int(window.performance.now())))  # UI is up

layout.start()
status.start(runtime)
model_choice.start()
memory.start()
chat.start(status.llm_host())
sessions.start()
tools_panel.start()
tabs.start()
take_over_worker()
