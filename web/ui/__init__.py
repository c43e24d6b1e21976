# The chat page's Python (MicroPython via PyScript), one module per part of the page.
