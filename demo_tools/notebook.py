"""Notes and a to-do list, kept in a :class:`~py_agent.kv.KeyValueStore`.

On the page the store is the worker's IndexedDB, so notes and to-dos outlive reloads and
are shared by every conversation (they are the user's, not one chat's). Records:

- ``note:000001`` -> ``{"id", "title", "text", "created_at", "updated_at"}``
- ``todo:000001`` -> ``{"id", "task", "due", "done", "created_at", "done_at"}``; ``due`` is
  an ISO date when the user's words could be read as one ("tomorrow", "friday",
  "in 3 days", "2026-05-01"), else their words as given, else ``""``.
- ``meta:next-note-id``, ``meta:next-todo-id``: counters, so a deleted number is never
  given to a new record (the model may still refer to it).

Every tool answers in a sentence the model can pass on: not-found, empty input and
duplicates are explained, never raised; a storage failure becomes "Could not ...: why".
"""

from __future__ import annotations

import datetime as dt
import re
import time
from typing import Any, Awaitable, Callable

from py_agent import KeyValueStore, StorageError, Tool, tool
from py_agent.retrieval import tokenize

from .dates import _parse_date

NOTE_PREFIX = "note:"
TODO_PREFIX = "todo:"
NOTE_COUNTER = "meta:next-note-id"
TODO_COUNTER = "meta:next-todo-id"
RECENT_NOTES = 10
PREVIEW_CHARS = 240
FULL_CHARS = 1000
TITLE_WORDS = 6

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUMBER = re.compile(r"^\s*(?:(?:note|todo|to-do|task|item|number|no\.?)\s*)?#?\s*(\d+)\s*$",
                     re.IGNORECASE)


def _clean(text: str) -> str:
    return " ".join(str(text).split())


def _same(a: str, b: str) -> bool:
    return _clean(a).casefold() == _clean(b).casefold()


def _short(text: str, limit: int) -> str:
    text = _clean(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _title_from(text: str) -> str:
    words = _clean(text).split()
    title = " ".join(words[:TITLE_WORDS])
    return _short(title + ("…" if len(words) > TITLE_WORDS else ""), 60)


def parse_due(text: str, today: dt.date) -> str:
    """A due date as ``YYYY-MM-DD`` when it can be read as one, else the words as given."""
    words = _clean(text).lower().removeprefix("by ").removeprefix("on ").removeprefix("due ")
    if not words:
        return ""
    if words in ("today", "tonight", "this evening", "this afternoon", "this morning"):
        return today.isoformat()
    if words in ("tomorrow", "tomorrow morning", "tomorrow evening", "tomorrow night"):
        return (today + dt.timedelta(days=1)).isoformat()
    if words in ("next week", "in a week"):
        return (today + dt.timedelta(days=7)).isoformat()
    match = re.fullmatch(r"in (\d+|a|an|one|two|three) (day|days|week|weeks)", words)
    if match:
        count = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(match.group(1))
        count = int(match.group(1)) if count is None else count
        days = count * (7 if "week" in match.group(2) else 1)
        return (today + dt.timedelta(days=days)).isoformat()
    match = re.fullmatch(r"(?:next |this )?(\w+)", words)
    if match and match.group(1) in _WEEKDAYS:
        ahead = (_WEEKDAYS.index(match.group(1)) - today.weekday()) % 7 or 7
        return (today + dt.timedelta(days=ahead)).isoformat()
    try:
        return _parse_date(words).isoformat()
    except ValueError:
        return _clean(text)


def _due_text(due: str, today: dt.date, done: bool = False) -> str:
    if not due:
        return ""
    try:
        date = dt.date.fromisoformat(due)
    except ValueError:
        return f" (due {due})"
    text = f" (due {date.strftime('%a %Y-%m-%d')}"
    if not done and date < today:
        text += ", overdue"
    elif not done and date == today:
        text += ", today"
    return text + ")"


async def _guard(action: str, work: Awaitable[str]) -> str:
    """The tool's answer, or a readable sentence when the storage failed."""
    try:
        return await work
    except StorageError as exc:
        return f"Could not {action}: {exc}"


class Notebook:
    """Notes and to-dos over a key-value store; each method returns the tool's answer."""

    def __init__(self, kv: KeyValueStore, *, clock: Callable[[], float] = time.time,
                 today: Callable[[], dt.date] = dt.date.today) -> None:
        self.kv = kv
        self.clock = clock
        self.today = today

    # --- records ---------------------------------------------------------------------

    async def _records(self, prefix: str) -> list[dict[str, Any]]:
        return [value for _, value in await self.kv.list(prefix) if isinstance(value, dict)]

    async def notes(self) -> list[dict[str, Any]]:
        return await self._records(NOTE_PREFIX)

    async def todos(self) -> list[dict[str, Any]]:
        return await self._records(TODO_PREFIX)

    async def _next_id(self, counter: str, records: list[dict[str, Any]]) -> int:
        # The counter is written first: if the record's write then fails, a number is
        # skipped, never reused for two records.
        stored = await self.kv.get(counter)
        next_id = max(int(stored) if isinstance(stored, (int, float)) else 1,
                      max((int(r.get("id", 0)) for r in records), default=0) + 1)
        await self.kv.put(counter, next_id + 1)
        return next_id

    @staticmethod
    def _key(prefix: str, record_id: int) -> str:
        return f"{prefix}{record_id:06d}"

    def _date(self, timestamp: float) -> str:
        return dt.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d")

    def _note_line(self, note: dict[str, Any], limit: int = PREVIEW_CHARS) -> str:
        return (f"#{note['id']} {note['title']} ({self._date(note.get('updated_at', 0))}): "
                f"{_short(note.get('text', ''), limit)}")

    def _todo_line(self, todo: dict[str, Any]) -> str:
        mark = "[x]" if todo.get("done") else "[ ]"
        return (f"{mark} #{todo['id']} {todo['task']}"
                f"{_due_text(todo.get('due', ''), self.today(), bool(todo.get('done')))}")

    # --- notes -----------------------------------------------------------------------

    async def add_note(self, text: str, title: str = "") -> str:
        text, title = str(text).strip(), _clean(title)
        if not text and not title:
            return "Nothing saved: the note is empty. Give the text to write down."
        if not text:
            text = title
        notes = await self.notes()
        same_title = next((n for n in notes if title and _same(n["title"], title)), None)
        if same_title is None and not title:
            same_text = next((n for n in notes if _same(n["text"], text)), None)
            if same_text is not None:
                return (f"Already saved as note #{same_text['id']} \"{same_text['title']}\"; "
                        "nothing changed.")
        now = self.clock()
        if same_title is not None:
            if _clean(text).casefold() in _clean(same_title["text"]).casefold():
                return (f"Already in note #{same_title['id']} \"{same_title['title']}\"; "
                        "nothing changed.")
            same_title["text"] = f"{same_title['text'].rstrip()}\n{text}"
            same_title["updated_at"] = now
            await self.kv.put(self._key(NOTE_PREFIX, same_title["id"]), same_title)
            return (f"Added to the existing note #{same_title['id']} \"{same_title['title']}\", "
                    f"which now reads: {_short(same_title['text'], PREVIEW_CHARS)}")
        note_id = await self._next_id(NOTE_COUNTER, notes)
        note = {"id": note_id, "title": title or _title_from(text), "text": text,
                "created_at": now, "updated_at": now}
        await self.kv.put(self._key(NOTE_PREFIX, note_id), note)
        return f"Saved note #{note_id} \"{note['title']}\"."

    async def search_notes(self, query: str = "") -> str:
        notes = await self.notes()
        if not notes:
            return "There are no notes yet."
        newest = sorted(notes, key=lambda n: (n.get("updated_at", 0), n["id"]), reverse=True)
        query = _clean(query)
        number = _NUMBER.match(query)
        if number:
            found = next((n for n in notes if n["id"] == int(number.group(1))), None)
            if found is not None:
                return self._note_line(found, FULL_CHARS)
        terms = set(tokenize(query))
        scored = []
        for note in newest:
            title_terms = set(tokenize(note["title"]))
            text_terms = tokenize(note["text"])
            score = sum(3 * (t in title_terms) + text_terms.count(t) for t in terms)
            if query and query.casefold() in f"{note['title']} {note['text']}".casefold():
                score += 5
            if score:
                scored.append((score, note))
        if not query or (not terms and not scored):
            lines = [self._note_line(n) for n in newest[:RECENT_NOTES]]
            more = f" (showing the newest {RECENT_NOTES})" if len(notes) > RECENT_NOTES else ""
            return f"{_count(len(notes), 'note')}, newest first{more}:\n" + "\n".join(lines)
        if not scored:
            titles = "; ".join(f"#{n['id']} {n['title']}" for n in newest[:RECENT_NOTES])
            return f"No note mentions \"{query}\". The notes are: {titles}."
        scored.sort(key=lambda s: -s[0])  # stable: the newest first among equals
        limit = FULL_CHARS if len(scored) == 1 else PREVIEW_CHARS
        lines = [self._note_line(n, limit) for _, n in scored[:RECENT_NOTES]]
        return f"{_count(len(scored), 'note')} about \"{query}\":\n" + "\n".join(lines)

    def _pick(self, records: list[dict[str, Any]], query: str,
              field: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The one record ``query`` names (by number, exact text or words), or candidates."""
        number = _NUMBER.match(query)
        if number:
            found = [r for r in records if r["id"] == int(number.group(1))]
            return (found[0], []) if found else (None, [])
        exact = [r for r in records if _same(r[field], query)]
        if exact:
            return exact[0], []
        contains = [r for r in records if query.casefold() in _clean(r[field]).casefold()]
        if len(contains) == 1:
            return contains[0], []
        terms = set(tokenize(query))
        by_words = [r for r in records if terms and terms <= set(tokenize(r[field]))]
        if len(by_words) == 1:
            return by_words[0], []
        return None, contains or by_words

    async def delete_note(self, note: str) -> str:
        query = _clean(note)
        if not query:
            return "Which note? Give its title or number (search_notes lists them)."
        notes = await self.notes()
        if not notes:
            return "There are no notes to delete."
        found, candidates = self._pick(notes, query, "title")
        if found is None and not candidates:
            found, candidates = self._pick(notes, query, "text")
        if found is None:
            if candidates:
                return ("Several notes match; which one? " +
                        "; ".join(f"#{n['id']} {n['title']}" for n in candidates[:RECENT_NOTES]))
            titles = "; ".join(f"#{n['id']} {n['title']}" for n in notes[-RECENT_NOTES:])
            return f"No note matches \"{query}\". The notes are: {titles}."
        await self.kv.delete(self._key(NOTE_PREFIX, found["id"]))
        return f"Deleted note #{found['id']} \"{found['title']}\"."

    # --- to-dos ----------------------------------------------------------------------

    async def add_todo(self, task: str, due: str = "") -> str:
        task = _clean(task).rstrip(".")
        if not task:
            return "Nothing added: the task is empty. Say what needs doing."
        due_value = parse_due(due, self.today())
        todos = await self.todos()
        existing = next((t for t in todos if not t.get("done") and _same(t["task"], task)), None)
        if existing is not None:
            if due_value and due_value != existing.get("due"):
                existing["due"] = due_value
                await self.kv.put(self._key(TODO_PREFIX, existing["id"]), existing)
                return f"Already on the to-do list; moved the due date: {self._todo_line(existing)}"
            return f"Already on the to-do list: {self._todo_line(existing)}"
        todo_id = await self._next_id(TODO_COUNTER, todos)
        todo = {"id": todo_id, "task": task, "due": due_value, "done": False,
                "created_at": self.clock(), "done_at": None}
        await self.kv.put(self._key(TODO_PREFIX, todo_id), todo)
        open_count = sum(1 for t in todos if not t.get("done")) + 1
        return f"Added to-do {self._todo_line(todo)}. {_count(open_count, 'open to-do')}."

    def _ordered(self, todos: list[dict[str, Any]]) -> list[dict[str, Any]]:
        def key(t: dict[str, Any]) -> tuple:
            due = t.get("due") or ""
            dated = bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", due))
            return (not dated, due if dated else "", t["id"])
        return sorted(todos, key=key)

    async def list_todos(self, include_done: bool = False) -> str:
        todos = await self.todos()
        pending = self._ordered([t for t in todos if not t.get("done")])
        done = sorted((t for t in todos if t.get("done")), key=lambda t: t.get("done_at") or 0,
                      reverse=True)
        if not todos:
            return "The to-do list is empty."
        parts = []
        if pending:
            parts.append(f"{_count(len(pending), 'open to-do')}:\n"
                         + "\n".join(self._todo_line(t) for t in pending))
        else:
            parts.append("No open to-dos: everything is done.")
        if include_done and done:
            parts.append(f"{len(done)} done:\n" + "\n".join(self._todo_line(t) for t in done))
        elif done:
            parts.append(f"({len(done)} done; pass include_done=true to list them.)")
        return "\n".join(parts)

    async def complete_todo(self, task: str) -> str:
        query = _clean(task)
        if not query:
            return "Which to-do? Give its number or words from it (list_todos shows them)."
        todos = await self.todos()
        pending = [t for t in todos if not t.get("done")]
        found, candidates = self._pick(pending, query, "task")
        if found is None and not candidates:
            finished, _ = self._pick([t for t in todos if t.get("done")], query, "task")
            if finished is not None:
                return f"That one is already done: {self._todo_line(finished)}"
        if found is None:
            if candidates:
                return ("Several open to-dos match; which one? " +
                        "; ".join(f"#{t['id']} {t['task']}" for t in candidates))
            if not pending:
                return f"No open to-do matches \"{query}\": the list has nothing open."
            listed = "; ".join(f"#{t['id']} {t['task']}" for t in self._ordered(pending))
            return f"No open to-do matches \"{query}\". Open to-dos: {listed}."
        found["done"] = True
        found["done_at"] = self.clock()
        await self.kv.put(self._key(TODO_PREFIX, found["id"]), found)
        left = len(pending) - 1
        return f"Done: #{found['id']} {found['task']}. {_count(left, 'open to-do')} left."


def notebook_tools(kv: KeyValueStore, *, clock: Callable[[], float] = time.time,
                   today: Callable[[], dt.date] = dt.date.today) -> list[Tool]:
    """The notes and to-do tools, sharing one :class:`Notebook` over ``kv``."""
    book = Notebook(kv, clock=clock, today=today)

    @tool(keywords=["note", "memo", "jot", "write down", "record", "keep",
                    "remember that", "nota", "apunta", "noter", "Notiz", "notieren", "merken"])
    async def add_note(text: str, title: str = "") -> str:
        """Save a new note: write down or jot down something to keep (an idea, a fact, a password,
        plans), stored on this device.

        Args:
            text: what to write down.
            title: a short title; notes with the same title are added to, not duplicated.

        Examples:
            make a note: the spare key is under the blue pot
            jot down that my locker code is 4312
            save this for later - flight BA117 leaves at 9:40
            keep a note that Sam prefers tea, not coffee
            remember that the gate code is 1234
        """
        return await _guard("save the note", book.add_note(text, title))

    @tool(keywords=["notes", "look up", "recall", "saved", "find",
                    "notas", "Notizen"])
    async def search_notes(query: str = "") -> str:
        """Search notes to recall what the user asked to write down earlier (e.g. about a trip); an
        empty query lists the newest notes.

        Args:
            query: words to look for, e.g. "trip" or "wifi password"; empty for recent notes.

        Examples:
            what was my locker code again?
            show me my notes
            did I save anything about the flight
            look up the note on Sam
            what was the gate code I told you?
        """
        return await _guard("read the notes", book.search_notes(query))

    @tool(confirm=True, keywords=["erase", "discard", "remove", "trash", "get rid of",
                    "borrar", "eliminar", "supprimer", "effacer", "löschen", "Notiz"])
    async def delete_note(note: str) -> str:
        """Delete (remove, forget) one note, named by its title or #number.

        Args:
            note: the note's title, or its number like "#3".

        Examples:
            remove note #2
            throw away my note about the locker
            erase what I wrote about the spare key
            forget my note about the gym
        """
        return await _guard("delete the note", book.delete_note(note))

    @tool(keywords=["to-do", "todo", "task", "reminder", "chore", "errand",
                    "recuérdame", "tarea", "rappelle-moi", "tâche", "erinnere", "Aufgabe"])
    async def add_todo(task: str, due: str = "") -> str:
        """Add a task to the todo list, as a reminder (remind me to buy milk, remember to call the
        dentist), optionally due tomorrow, friday or a date.

        Args:
            task: what needs doing.
            due: when it is due, e.g. "tomorrow", "friday", "2026-05-01"; empty if no date.

        Examples:
            remind me to water the plants on Sunday
            put "renew passport" on my list
            I have to return the library books by Thursday
            don't let me forget to call grandma
            add pick up the dry cleaning for tomorrow
            I need to renew my passport before June
        """
        return await _guard("add the to-do", book.add_todo(task, due))

    @tool(keywords=["tasks", "to-do list", "todo list", "pending", "reminders", "agenda",
                    "tareas", "pendientes", "tâches", "reste à faire", "Aufgaben"])
    async def list_todos(include_done: bool = False) -> str:
        """List the open tasks on the todo list (what I still have to do), with due dates and
        overdue ones.

        Args:
            include_done: also list finished tasks.

        Examples:
            show my tasks
            what's left on my list?
            anything overdue
            what are my reminders for this week
            what else do I have to do?
        """
        return await _guard("read the to-do list", book.list_todos(include_done))

    @tool(keywords=["done", "complete", "finished", "tick off", "check off", "cross off",
                    "hecho", "terminado", "fait", "terminé", "erledigt"])
    async def complete_todo(task: str) -> str:
        """Mark a task on the todo list as done: finished, completed, ticked or crossed off; by its
        #number or words.

        Args:
            task: the task's number like "2", or words from it like "milk".

        Examples:
            I've returned the library books
            paid the phone bill, that one's done
            check off task 3
            the plants are watered, cross that one off
            mark "renew passport" as finished
        """
        return await _guard("update the to-do", book.complete_todo(task))

    return [add_note, search_notes, delete_note, add_todo, list_todos, complete_todo]
