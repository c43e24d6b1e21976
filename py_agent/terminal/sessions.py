"""``py-agent sessions``: the terminal's conversations in their SQLite file.

    py-agent sessions [list]             # id, last change, turns, title; newest first
    py-agent sessions show ID            # summary, key facts and the transcript
    py-agent sessions export ID [--out FILE]   # py-agent-session/2 JSON Lines
    py-agent sessions delete ID

Read and written through the store alone (:class:`~py_agent.sqlite_store.SqliteStore`):
no model, no agent. An export is the format the page's *Export* writes and its *Import*
and ``python -m py_agent.replay`` read (:mod:`py_agent.transfer`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TextIO

from ..sqlite_store import SqliteStore
from ..transfer import SessionBundle


class UnknownSession(LookupError):
    """The id names no session in the database."""


def add_arguments(sessions: argparse.ArgumentParser) -> None:
    """The ``sessions`` command's actions; ``--db`` is accepted before or after one."""
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS,
                    help="the SQLite file of sessions (default: the chat's)")
    sessions.add_argument("--db", metavar="PATH", default=None,
                          help="the SQLite file of sessions (default: the chat's)")
    actions = sessions.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("list", parents=[db], help="list the sessions, newest first (default)")
    show = actions.add_parser("show", parents=[db],
                              help="a session's summary, key facts and transcript")
    show.add_argument("session_id", metavar="ID")
    export = actions.add_parser("export", parents=[db],
                                help="a session as py-agent-session/2 JSON Lines, as the page "
                                     "exports it")
    export.add_argument("session_id", metavar="ID")
    export.add_argument("--out", metavar="FILE", help="write it here (default: standard output)")
    delete = actions.add_parser("delete", parents=[db], help="delete a session and its archive")
    delete.add_argument("session_id", metavar="ID")


def _when(ms: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


async def list_sessions(store: SqliteStore, out: TextIO) -> None:
    for info in await store.list_sessions():
        print(f"{info.session_id}\t{_when(info.updated_at)}\t{info.turns} turns\t{info.title}",
              file=out)


async def load_bundle(store: SqliteStore, session_id: str) -> SessionBundle:
    """Everything the store holds of one session (UnknownSession if nothing)."""
    state = await store.load(session_id)
    if state is None:
        raise UnknownSession(session_id)
    return SessionBundle(state=state, turns=await store.read_archive(session_id),
                         compressions=await store.compressions(session_id))


async def show_session(store: SqliteStore, session_id: str, out: TextIO) -> None:
    bundle = await load_bundle(store, session_id)
    state = bundle.state
    print(f"{state.session_id}: {state.title or '(untitled)'}", file=out)
    print(f"last change {_when(state.updated_at)}, {len(bundle.turns)} turns, "
          f"{state.compactions} compactions", file=out)
    if state.summary:
        print(f"\nSummary:\n{state.summary}", file=out)
    if state.facts:
        print("\nKey facts:", file=out)
        for fact in state.facts:
            print(f"- [{fact.category}] {fact.text}", file=out)
    if bundle.turns:
        print("\nTranscript:", file=out)
    for turn in bundle.turns:
        print(f"\n#{turn.id} you: {turn.user}", file=out)
        status = "" if turn.status == "answered" else f" ({turn.status})"
        print(f"#{turn.id} agent{status}: {turn.answer}", file=out)


async def export_session(store: SqliteStore, session_id: str, out_path: str | None,
                         out: TextIO) -> None:
    text = (await load_bundle(store, session_id)).to_jsonl()
    if out_path is None:
        out.write(text)
        return
    Path(out_path).expanduser().write_text(text, encoding="utf-8")
    print(f"exported {session_id} to {out_path}", file=sys.stderr)


async def delete_session(store: SqliteStore, session_id: str) -> None:
    if not await store.delete_session(session_id):
        raise UnknownSession(session_id)


async def run(args: argparse.Namespace, db: Path, out: TextIO | None = None) -> int:
    """Carry out the parsed ``sessions`` command on the database ``db``; print to ``out``
    (standard output by default)."""
    out = out or sys.stdout
    action = args.action or "list"
    if action != "list" and not db.exists():
        print(f"error: no session {args.session_id!r}: {db} does not exist", file=sys.stderr)
        return 1
    store = SqliteStore(db)
    try:
        if action == "list":
            await list_sessions(store, out)
        elif action == "show":
            await show_session(store, args.session_id, out)
        elif action == "export":
            await export_session(store, args.session_id, args.out, out)
        else:
            await delete_session(store, args.session_id)
    except UnknownSession as missing:
        print(f"error: no session {missing.args[0]!r} in {db} (`py-agent sessions` lists them)",
              file=sys.stderr)
        return 1
    finally:
        store.close()
    return 0
