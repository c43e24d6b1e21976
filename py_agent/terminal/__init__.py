"""py-agent in a terminal: the ``py-agent`` command (also ``python -m py_agent``).

- ``commands``: the installed command; hands ``chat`` and ``sessions`` to ``cli`` and
  ``replay`` to :mod:`py_agent.replay`;
- ``cli``: the command line of ``chat`` and ``sessions``, checked before anything starts;
- ``chat``: the chat loop, against an OpenAI-compatible server, with a SQLite store;
- ``sessions``: ``py-agent sessions``: list, show, export and delete saved conversations;
- ``tool_files``: the ``--tools`` modules a terminal user names, loaded from disk.
"""
