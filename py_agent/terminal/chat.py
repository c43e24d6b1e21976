"""The terminal chat loop behind ``python -m py_agent chat`` (see :mod:`py_agent.terminal.cli`).

Answers go to stdout; the banner, prompts, trace and errors to stderr, so piping the
output keeps only the answers. Everything printed passes through
:func:`~py_agent.boundary.printable` first: a model's answer, a tool's result or a server's
name cannot move the cursor, ring the bell or turn text around (an escape sequence that
draws a false approval line shows as ``\u001b[2K``). A failed turn says why and is saved
as failed (the agent archives it); the next line is tried as usual. On exit, a compaction
still running is given a bounded time to finish: the raw turns are saved before it, so
stopping it loses nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..agent import Agent
from ..attachments import MAX_PER_MESSAGE, Attachment, AttachmentError
from ..boundary import printable
from ..redaction import redact_url
from ..events import AgentEvent
from ..openai_compat import OpenAIModel, ServerError, StreamChunk, Timeouts
from ..openai_compat.embeddings import OpenAIEmbedder
from ..results import RunResult
from ..sqlite_store import SqliteStore
from ..store import StorageError
from ..tools import Toolbox
from ..turn.approval import ApprovalRequest
from .tool_files import ToolFileError, load_tool_files

COMPACTION_WAIT_S = 120.0
HELP = """\
Commands: /memory (what the next prompt carries), /compact [focus] (compact now),
/attach PATH (a picture or sound for the next message; /attach alone lists them,
/detach drops them), /sessions (list), /help, /quit (or Ctrl-D). Anything else is a
message to the agent."""


@dataclass
class ChatOptions:
    base_url: str
    model: str
    db: Path
    session_id: str
    tool_paths: list[str] = field(default_factory=list)   # --tools modules
    mcp_urls: list[str] = field(default_factory=list)     # --mcp tool servers
    mcp_trusted: list[str] = field(default_factory=list)  # --mcp-trusted: labels believed
    mcp_token: str | None = None                          # --mcp-token
    trace: bool = False
    context_window: int | None = None
    max_tokens: int = 1024
    temperature: float | None = None
    timeout: float = 120.0
    stream: bool = True
    structured_output: bool | str | None = None
    api_key: str | None = None
    attach: list[str] = field(default_factory=list)      # --attach: for the first message
    embed_model: str | None = None   # --embed-model: the server's embedding model


_ANSWER = re.compile(r'"finalAnswer"\s*:\s*"((?:[^"\\]|\\.)*)')
_TOOL = re.compile(r'"toolName"\s*:\s*"((?:[^"\\]|\\.)*)"')


def answer_preview(step_text: str) -> str | None:
    """The final answer as far as it has streamed, from a step that answers (toolName
    "none"), or None. Escapes cut in half at the end are left for the next chunk."""
    tool = _TOOL.search(step_text)
    match = _ANSWER.search(step_text)
    if not tool or tool.group(1) != "none" or not match:
        return None
    body = re.sub(r"\\(u[0-9a-fA-F]{0,3})?$", "", match.group(1))
    try:
        return json.loads(f'"{body}"')
    except ValueError:
        return None


class Terminal:
    """What the user sees: answers (streamed when stdout is a terminal), trace, errors."""

    def __init__(self, trace: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.trace = trace
        self.out, self.err = out, err
        self.live = out.isatty()
        self.shown = ""  # the part of this turn's answer already printed

    def note(self, text: str) -> None:
        print(printable(text), file=self.err, flush=True)

    def on_chunk(self, chunk: StreamChunk) -> None:
        if not self.live or chunk.purpose != "step":
            return
        preview = answer_preview(chunk.text)
        if preview and preview.startswith(self.shown) and len(preview) > len(self.shown):
            self.out.write(printable(preview[len(self.shown):]))
            self.out.flush()
            self.shown = preview

    def answer(self, result: RunResult) -> None:
        if result.status == "error":
            if self.shown:
                self.out.write("\n")
            self.note(f"error: {result.answer}\n(This turn is saved as failed; "
                      "send it again once the problem is fixed.)")
        elif result.status == "stopped":
            self.note("(stopped)")
        elif self.shown and result.answer.startswith(self.shown):
            print(printable(result.answer[len(self.shown):]), file=self.out, flush=True)
        else:
            print(("\n" if self.shown else "") + printable(result.answer), file=self.out,
                  flush=True)
        self.shown = ""

    def on_event(self, event: AgentEvent) -> None:
        data = event.data
        if event.type == "storage_error":
            self.note(f"warning: {data.get('message')}")
        if not self.trace:
            return
        kind = event.type
        if kind == "tools_retrieved":
            offered = ", ".join(f"{t['name']} ({t['score']:.2f})" for t in data["tools"])
            self.note(f"  · tools offered: {offered or 'none'}")
        elif kind == "thought":
            self.note(f"  · step {data['index']}: {data['text']}")
        elif kind == "action":
            self.note(f"  · action: {data['tool']}({data['input']})")
        elif kind == "observation":
            mark = "" if data.get("ok", True) else " [corrected]" if data.get("kind") == \
                "corrective" else " [failed]"
            self.note(f"  · observation{mark}: {data['text']}")
        elif kind == "compaction_started":
            self.note(f"  · compacting turns {data['turn_ids']} ({data['trigger']})")
        elif kind == "memory_updated":
            record = data.get("record") or {}
            self.note(f"  · memory compacted: {record.get('tokens_before')} → "
                      f"{record.get('tokens_after')} tokens in {record.get('duration_ms')} ms; "
                      f"summary: {data.get('summary', '')[:200]}")
        elif kind == "compaction_failed":
            self.note(f"  · compaction failed ({data.get('error')}); the raw turns are kept")


class LineReader:
    """Lines from stdin, read on a daemon thread one at a time, when asked for.

    Asking first keeps the ``you>`` prompt from showing while a turn still prints; a
    daemon thread, unlike the loop's executor, never keeps the process from exiting.
    """

    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive
        self._loop = asyncio.get_running_loop()
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._wanted = threading.Semaphore(0)
        self._prompt = "you> "
        self._ended = False
        threading.Thread(target=self._run, name="py-agent-stdin", daemon=True).start()

    async def next(self, prompt: str = "you> ") -> str | None:
        """The next line without its newline, or None at the end of input; ``prompt`` is
        shown first in a terminal."""
        if self._ended:
            return None
        self._prompt = prompt
        self._wanted.release()
        line = await self._lines.get()
        self._ended = line is None
        return line

    def _run(self) -> None:
        while True:
            self._wanted.acquire()
            try:
                line: str | None = input(self._prompt) if self.interactive \
                    else sys.stdin.readline()
            except (EOFError, KeyboardInterrupt):
                line = None
                if self.interactive:
                    print(file=sys.stderr)  # end the prompt's line
            if line == "" and not self.interactive:
                line = None  # the end of piped input
            try:
                self._loop.call_soon_threadsafe(self._lines.put_nowait,
                                                None if line is None else line.rstrip("\n"))
            except RuntimeError:  # the loop is gone
                return
            if line is None:
                return


def attach(path: str, pending: list[Attachment], ui: Terminal) -> bool:
    """Check the file at ``path`` (read, sniffed, within the caps) and add it to the
    attachments of the next message; say what it is, or why not. True if added."""
    if len(pending) >= MAX_PER_MESSAGE:
        ui.note(f"error: a message may carry at most {MAX_PER_MESSAGE} attachments")
        return False
    try:
        loaded = Attachment(path=str(Path(path).expanduser())).loaded()
    except AttachmentError as exc:
        ui.note(f"error: {exc}")
        return False
    pending.append(loaded)
    ui.note(f"attached {loaded.label}: {loaded.describe()}; it goes with your next message")
    return True


async def _command(line: str, agent: Agent, session_id: str, ui: Terminal,
                   pending: list[Attachment] | None = None) -> bool:
    """Handle a /command; False when the user wants to leave."""
    name, _, rest = line[1:].partition(" ")
    pending = pending if pending is not None else []
    if name in ("quit", "exit"):
        return False
    if name == "attach":
        if rest.strip():
            attach(rest.strip(), pending, ui)
        else:
            ui.note("attached: " + (", ".join(f"{a.label} ({a.describe()})" for a in pending)
                                    or "nothing"))
        return True
    if name == "detach":
        ui.note(f"dropped {len(pending)} attachment(s)")
        pending.clear()
        return True
    if name == "memory":
        try:
            state = await agent.memory_state(session_id)
        except KeyError:
            ui.note("(nothing in this session yet)")
            return True
        budget = state.budget
        ui.note(f"summary: {state.summary or '(none yet)'}")
        for fact in state.facts:
            ui.note(f"fact [{fact.category}]: {fact.text}")
        ui.note(f"recent turns: {len(state.recent_turns)}; compactions: {state.compactions}"
                + (f"; window {budget.context_window} tokens, turns use {budget.turns}"
                   if budget else ""))
    elif name == "compact":
        try:
            report = await agent.compact(session_id, focus=rest.strip() or None)
        except KeyError:
            ui.note("(nothing to compact yet)")
            return True
        ui.note(f"compacted {report.compacted_turns} turns" if report.ok
                else f"nothing compacted: {report.error}")
    elif name == "sessions":
        for info in await agent.store.list_sessions():
            ui.note(f"{info.session_id}\t{info.turns} turns\t{info.title}")
    else:
        ui.note(HELP)
    return True


async def run_chat(options: ChatOptions, *, stdin_interactive: bool | None = None) -> int:
    """The REPL; returns the exit status (1 if any turn failed, 0 otherwise)."""
    interactive = sys.stdin.isatty() if stdin_interactive is None else stdin_interactive
    ui = Terminal(options.trace)
    try:
        store = SqliteStore(options.db)
    except StorageError as exc:
        ui.note(f"error: {exc}")
        return 1
    try:
        tools = load_tool_files(options.tool_paths, store.key_value_store())
    except ToolFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        store.close()
        return 2
    extra: dict[str, Any] = {} if options.temperature is None else {"temperature": options.temperature}
    model = OpenAIModel(options.base_url, options.model, api_key=options.api_key,
                        context_window=options.context_window, max_tokens=options.max_tokens,
                        structured_output=options.structured_output, stream=options.stream,
                        on_chunk=ui.on_chunk, options=extra,
                        timeouts=Timeouts(read=options.timeout,
                                          call=max(600.0, options.timeout * 2)))
    problem = await _connect(model)
    toolbox = Toolbox(tools)
    servers = await connect_servers(options, toolbox, ui)
    if servers is None:
        store.close()
        return 2
    reader = LineReader(interactive)
    # The memory policy and the prompt prefix fit themselves to the model's window.
    # Sentence vectors: the server's embedding model when named, else USE-m3 where the
    # embed extra is installed (Agent's default), else none.
    embedder: Any = OpenAIEmbedder(model.client, options.embed_model) \
        if options.embed_model else True
    agent = Agent(model=model, store=store, tools=toolbox, on_event=ui.on_event,
                  approve=lambda request: ask_approval(request, reader, ui), embedder=embedder)
    if interactive or options.trace:
        ui.note(_banner(model, options, problem, len(agent.tools)))
    loop = asyncio.get_running_loop()
    failed = False
    pending: list[Attachment] = []
    for path in options.attach:   # --attach: with the first message
        if not attach(path, pending, ui):
            failed = True
    try:
        while (line := await reader.next()) is not None:
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if not await _command(text, agent, options.session_id, ui, pending):
                    break
                continue
            media, pending[:] = list(pending), []
            result = await _turn(agent, text, options.session_id, loop, interactive, media)
            ui.answer(result)
            failed = failed or result.status == "error"
    finally:
        await toolbox.close()   # and the tool servers' connections
        await _finish(agent, store, ui)
    return 1 if failed else 0


APPROVAL_ANSWERS = {"y": "once", "yes": "once", "a": "chat", "all": "chat",
                    "n": "deny", "no": "deny"}


async def ask_approval(request: ApprovalRequest, reader: "LineReader", ui: Terminal) -> str:
    """The terminal's approver: y (allow once), a (allow for this chat) or n (deny), read
    from the next line of input; anything else, or the end of input, denies. The question
    is one line, whatever the tool's server calls itself or the arguments hold."""
    where = f" from {request.server}" if request.server else ""
    arguments = json.dumps(request.arguments, ensure_ascii=False)
    ui.note(printable(f"The agent wants to run {request.tool}{where} with {arguments}.",
                      lines=False))
    ui.note("Allow it? [y] once, [a] for this chat, [n] no: ")
    line = await reader.next(prompt="allow? [y/a/n] ")
    chosen = APPROVAL_ANSWERS.get((line or "").strip().lower(), "deny")
    ui.note({"once": "  allowed once", "chat": "  allowed for this chat",
             "deny": "  denied"}[chosen])
    return chosen


async def connect_servers(options: ChatOptions, toolbox: Toolbox, ui: Terminal) -> list | None:
    """Connect the --mcp and --mcp-trusted servers as sources of ``toolbox`` (which follows
    each server's list); each server's state on stderr, with the tools that say they only
    read and whether that is believed. None when the MCP SDK is missing."""
    wanted = [*((url, False) for url in options.mcp_urls),
              *((url, True) for url in options.mcp_trusted)]
    if not wanted:
        return []
    from ..mcp import mcp_server
    from ..mcp.python_client import INSTALL_HINT
    try:
        import mcp  # noqa: F401  (the SDK: the py-agent[mcp] extra)
    except ImportError:
        print(f"error: --mcp: {INSTALL_HINT}", file=sys.stderr)
        return None
    logging.getLogger("mcp").setLevel(logging.CRITICAL)   # its tracebacks are ours to say
    headers = {"Authorization": f"Bearer {options.mcp_token}"} if options.mcp_token else None
    servers = []
    for url, trusted in wanted:
        server = mcp_server(url, headers=headers, trusted=trusted)
        toolbox.add(server)
        await toolbox.listed(server.key)
        if server.state == "connected":
            ui.note(f"tool server {server.name} at {server.shown_url}: "
                    f"{len(server.tools)} tools")
        else:
            ui.note(f"tool server at {server.shown_url}: {server.state}: {server.error}")
        for problem in server.skipped:
            ui.note(f"  {problem}")
        claims = server.read_only_claims
        if claims and trusted:
            ui.note(f"  its labels are trusted: {', '.join(claims)} run without asking")
        elif claims:
            ui.note(f"  {len(claims)} of its tools say they only read ({', '.join(claims)}): "
                    f"each call asks first, unless you trust its labels (--mcp-trusted "
                    f"{server.shown_url})")
        servers.append(server)
    return servers


async def _turn(agent: Agent, text: str, session_id: str, loop: asyncio.AbstractEventLoop,
                interactive: bool, attachments: list[Attachment] = ()) -> RunResult:
    """One turn; in a terminal, Ctrl-C stops it (the turn ends as "stopped")."""
    abort = asyncio.Event()
    handled = False
    if interactive:
        try:
            loop.add_signal_handler(signal.SIGINT, abort.set)
            handled = True
        except (NotImplementedError, RuntimeError):
            pass
    try:
        return await agent.run(text, session_id=session_id, abort=abort,
                               attachments=attachments)
    finally:
        if handled:
            loop.remove_signal_handler(signal.SIGINT)


async def _connect(model: OpenAIModel) -> ServerError | None:
    """Reach the server once to learn its window; a failure is reported, not fatal
    (each turn then fails with the reason and is saved as failed)."""
    try:
        await model.connect()
    except ServerError as exc:
        return exc
    return None


def _banner(model: OpenAIModel, options: ChatOptions, problem: ServerError | None,
            tool_count: int) -> str:
    window = (f"not reachable now: {problem}" if problem else
              f"context {model.window} tokens ({model.window_source})")
    return (f"py-agent · {model.name} at {redact_url(model.base_url)} · {window}\n"
            f"session {options.session_id} (continue it with --session {options.session_id})"
            f" · {tool_count} tools · /help for commands")


async def _finish(agent: Agent, store: SqliteStore, ui: Terminal) -> None:
    if not await agent.wait_idle(timeout=0.5):
        if ui.trace:
            ui.note("  · waiting for the memory compaction to finish…")
        if not await agent.wait_idle(timeout=COMPACTION_WAIT_S):
            ui.note("warning: a memory compaction did not finish in time; the raw turns are "
                    "saved and it is retried next time")
    await agent.close(timeout=0)
    store.close()
