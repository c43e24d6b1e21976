"""``py-agent chat`` (or ``python -m py_agent chat``): the agent in a terminal, against an
OpenAI-compatible server.

    py-agent chat --base-url http://localhost:11434/v1 --model gemma3 \\
        [--tools FILE]... [--mcp URL]... [--mcp-trusted URL]... [--session ID] [--db PATH] [--trace]
    py-agent sessions [list | show ID | export ID | delete ID]   (py_agent.terminal.sessions)
    py-agent replay SESSION.jsonl ...                            (py_agent.replay)

The same :class:`~py_agent.Agent`, retriever and memory as the page; sessions are kept
in SQLite (:class:`~py_agent.sqlite_store.SqliteStore`, by default in the user's data
folder) so ``--session ID`` picks a conversation up where it was left. Lines come from
the keyboard, or from standard input when it is piped (then without prompts).
The API key, if the server wants one, is read from ``PY_AGENT_API_KEY`` or
``OPENAI_API_KEY``: never from a flag, so it does not land in shell history.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

from . import sessions as session_commands
from ..openai_compat.environment import API_KEY_VARIABLES, api_key_from_environment
from .tool_files import ToolFileError


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/py-agent/sessions.db`` (``~/.local/share`` by default;
    ``%LOCALAPPDATA%`` on Windows)."""
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "py-agent" / "sessions.db"


def build_parser() -> argparse.ArgumentParser:
    # The installed command (pyproject.toml's [project.scripts]) or ``python -m py_agent``.
    prog = "py-agent" if Path(sys.argv[0]).stem == "py-agent" else "python -m py_agent"
    parser = argparse.ArgumentParser(prog=prog, description="py-agent in the terminal.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chat = commands.add_parser(
        "chat", help="chat with the agent through an OpenAI-compatible server",
        description="Chat with the agent through an OpenAI-compatible server (Ollama, "
                    "llama.cpp, LM Studio, vLLM). The API key, if needed, is read from "
                    + " or ".join(API_KEY_VARIABLES) + ".")
    chat.add_argument("--base-url", required=True,
                      help="the server's API base, e.g. http://localhost:11434/v1")
    chat.add_argument("--model", required=True, help="the model name the server knows")
    chat.add_argument("--tools", action="append", default=[], metavar="FILE",
                      help="a Python file whose module-level @tool functions the agent may "
                           "use (repeatable)")
    chat.add_argument("--mcp", action="append", default=[], metavar="URL",
                      help="a tool server (MCP over Streamable HTTP, e.g. "
                           "http://localhost:3001/mcp) whose tools the agent may use; "
                           "repeatable (needs pip install 'py-agent[mcp]')")
    chat.add_argument("--mcp-trusted", action="append", default=[], metavar="URL",
                      help="a tool server as --mcp, whose labels you trust: its tools that "
                           "say they only read run without asking (repeatable)")
    chat.add_argument("--mcp-token", metavar="TOKEN", default=None,
                      help="a bearer token sent to the --mcp servers")
    chat.add_argument("--session", metavar="ID",
                      help="the conversation to continue or start (default: a new one)")
    chat.add_argument("--db", metavar="PATH", default=None,
                      help=f"the SQLite file of sessions (default: {default_db_path()})")
    chat.add_argument("--trace", action="store_true",
                      help="print each step, tool call and compaction (to stderr)")
    chat.add_argument("--context-window", type=int, metavar="TOKENS",
                      help="the model's context window (default: asked from the server)")
    chat.add_argument("--max-tokens", type=int, default=1024, metavar="TOKENS",
                      help="the longest reply to ask for (default: %(default)s)")
    chat.add_argument("--temperature", type=float, help="sampling temperature")
    chat.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                      help="how long the server may stay silent during a reply "
                           "(default: %(default)s)")
    chat.add_argument("--structured-output", default="auto",
                      choices=["auto", "json_schema", "json_object", "off"],
                      help="how steps are constrained to JSON (default: auto, stepping down "
                           "when the server refuses one)")
    chat.add_argument("--no-stream", action="store_true", help="ask for whole replies")
    chat.add_argument("--attach", action="append", default=[], metavar="PATH",
                      help="a picture or sound for the first message (repeatable; /attach "
                           "PATH in the chat for the next one)")
    chat.add_argument("--embed-model", metavar="NAME", default=None,
                      help="the server's embedding model (POST /v1/embeddings) for tool "
                           "choice and recall; default: USE-m3 if py-agent[embed] is installed")
    session_commands.add_arguments(commands.add_parser(
        "sessions", help="list, show, export or delete the chat's sessions"))
    # Listed for --help; py_agent.terminal.commands hands its arguments to py_agent.replay.
    commands.add_parser("replay", help="replay a session's recorded compactions with today's "
                                       "prompts (py-agent replay --help)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "replay":   # py_agent.terminal.commands hands it to py_agent.replay first
        print("error: replay has its own command line: py-agent replay --help", file=sys.stderr)
        return 2
    db = Path(args.db).expanduser() if args.db else default_db_path()
    try:
        if args.command == "sessions":
            return asyncio.run(session_commands.run(args, db))
        from .chat import ChatOptions, run_chat

        for path in args.tools:   # fail before the database is touched
            if not Path(path).expanduser().exists():
                raise ToolFileError(f"--tools {path}: no such file or folder")
        for path in args.attach:
            if not Path(path).expanduser().is_file():
                raise ToolFileError(f"--attach {path}: no such file")
        options = ChatOptions(
            base_url=args.base_url, model=args.model, tool_paths=args.tools, db=db,
            mcp_urls=args.mcp, mcp_trusted=args.mcp_trusted, mcp_token=args.mcp_token,
            session_id=args.session or time.strftime("chat-%Y%m%d-%H%M%S"),
            trace=args.trace, context_window=args.context_window, max_tokens=args.max_tokens,
            temperature=args.temperature, timeout=args.timeout, stream=not args.no_stream,
            structured_output={"auto": None, "off": False}.get(args.structured_output,
                                                                args.structured_output),
            api_key=api_key_from_environment(), attach=args.attach,
            embed_model=args.embed_model)
        return asyncio.run(run_chat(options))
    except ToolFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a malformed --base-url or a bad number
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
