# The fields of an agent step (a JSON object) while the model is still streaming it, so
# the page can show the thought and the answer as they arrive.
#
# Chunks come fast and an answer can be tens of kilobytes: everything before the answer
# (thought, tool name, tool input: short) is re-read as it grows, but the answer itself is
# decoded chunk by chunk, each character once, so a whole stream costs time in proportion
# to its length. Plain Python, no browser: it runs in MicroPython and in CPython tests.
import json

ANSWER_KEY = "finalAnswer"
QUOTED_ANSWER_KEY = '"%s"' % ANSWER_KEY


def partial_string(text, key):
    """The value of string field ``key`` in a JSON object that is still streaming in,
    as far as it has arrived, or None when the field has not started yet."""
    start = value_start(text, key)
    if start < 0:
        return None
    body = text[start:]
    end = body.find('"')
    while end >= 0 and escaped(body, end):
        end = body.find('"', end + 1)
    if end >= 0:
        body = body[:end]
    return decode(body[:safe_end(body)])


def value_start(text, key):
    """Where the string value of ``key`` starts in ``text`` (after its quote), or -1."""
    at = text.find('"%s"' % key)
    if at < 0:
        return -1
    return value_after(text, at, key)


def value_after(text, at, key):
    """Where the string value starts after the quoted ``key`` found at ``at``, or -1
    (not a string value, or not arrived yet)."""
    at = skip_space(text, at + len(key) + 2)
    if text[at:at + 1] != ":":
        return -1
    at = skip_space(text, at + 1)
    return at + 1 if text[at:at + 1] == '"' else -1


def skip_space(text, at):
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def escaped(text, index):
    """Is the character at ``index`` escaped (an odd run of backslashes before it)?"""
    run = 0
    while index - run - 1 >= 0 and text[index - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def safe_end(body):
    """How much of the raw (still escaped) string ``body`` decodes on its own: up to an
    escape cut in half, or a high surrogate still waiting for its pair."""
    at, size = 0, len(body)
    while at < size:
        if body[at] != "\\":
            at += 1
        elif at + 1 >= size:
            return at
        elif body[at + 1] != "u":
            at += 2
        elif at + 6 > size:
            return at
        elif 0xD800 <= _hex(body[at + 2:at + 6]) < 0xDC00 and at + 12 > size:
            return at
        else:
            at += 6
    return size


def _hex(digits):
    try:
        return int(digits, 16)
    except ValueError:
        return -1


def decode(raw):
    try:
        return json.loads('"' + raw + '"')
    except Exception:   # malformed escapes from the model: show what it wrote
        return raw


class StreamedReply:
    """One step reply as it streams: feed(chunk) each delta; field(key) for the short
    fields, answer() for the final answer so far (or None before it starts)."""

    def __init__(self):
        self.head = ""          # the reply up to where the answer's value starts
        self.size = 0           # characters fed
        self.key_at = -1        # where the answer's key is in head, once it arrived
        self.searched = 0       # head before this holds no start of the answer's key
        self.parts = None       # decoded pieces of the answer, once it started
        self.raw = ""           # answer characters not decoded yet
        self.closed = False     # the answer's closing quote arrived
        self.backslashes = 0    # the run of backslashes at the end of what was scanned

    def feed(self, chunk):
        self.size += len(chunk)
        if self.parts is None:
            self.head += chunk
            start = self._answer_start()
            if start < 0:
                return
            chunk = self.head[start:]
            self.head = self.head[:start]
            self.parts = []
        if not self.closed:
            self._scan(chunk)

    def _answer_start(self):
        """Where the answer's value starts in head, or -1. Each call reads what arrived
        since the last one (and the key's length before it), so that a long thought
        streamed in many small chunks costs time in proportion to its length."""
        head = self.head
        if self.key_at < 0:
            at = head.find(QUOTED_ANSWER_KEY, self.searched)
            if at < 0:
                self.searched = max(0, len(head) - len(QUOTED_ANSWER_KEY) + 1)
                return -1
            self.key_at = at
        return value_after(head, self.key_at, ANSWER_KEY)

    def _scan(self, chunk):
        for index in range(len(chunk)):
            char = chunk[index]
            if char == "\\":
                self.backslashes += 1
                continue
            if char == '"' and self.backslashes % 2 == 0:
                self.raw += chunk[:index]
                self.closed = True
                break
            self.backslashes = 0
        else:
            self.raw += chunk
        end = len(self.raw) if self.closed else safe_end(self.raw)
        if end:
            self.parts.append(decode(self.raw[:end]))
            self.raw = self.raw[end:]

    def field(self, key):
        return partial_string(self.head, key)

    def answer(self):
        if self.parts is None:
            return None
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""
