"""web/ui/streamed_reply.py in CPython: the thought and the answer of a step reply read
while it streams, whatever the chunk boundaries, and the answer decoded chunk by chunk.

The module is the page's (MicroPython via PyScript); it is plain Python with no browser
import, so it is imported here from web/ directly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st

WEB = str(Path(__file__).resolve().parents[2] / "web")
if WEB not in sys.path:
    sys.path.insert(0, WEB)

from ui.streamed_reply import StreamedReply, partial_string, safe_end  # noqa: E402


def reply(thought: str, tool: str, answer: str, ascii: bool = False) -> str:
    return json.dumps({"thought": thought, "toolName": tool, "toolInput": "",
                       "finalAnswer": answer}, ensure_ascii=ascii)


def stream(text: str, cuts: list[int]) -> list[tuple[str | None, str | None]]:
    """(thought, answer) after each chunk of ``text`` cut at ``cuts``."""
    streamed, seen, last = StreamedReply(), [], 0
    for cut in sorted(set(cuts)) + [len(text)]:
        streamed.feed(text[last:cut])
        last = cut
        seen.append((streamed.field("thought"), streamed.answer()))
    return seen


def test_partial_string_reads_what_has_arrived() -> None:
    text = '{"thought": "Adding up \\"the\\" bill", "toolName": "no'
    assert partial_string(text, "thought") == 'Adding up "the" bill'
    assert partial_string(text, "toolName") == "no"
    assert partial_string(text, "finalAnswer") is None
    assert partial_string('{"thought" : "tab\\', "thought") == "tab"      # escape cut
    assert partial_string('{"thought":"caf\\u00', "thought") == "caf"
    assert partial_string('{"thought":"x\\ud83d', "thought") == "x"      # half a pair
    assert partial_string('{"thought":"x\\ud83d\\ude00"', "thought") == "x\U0001F600"
    assert partial_string('{"thought": 3}', "thought") is None


def test_safe_end() -> None:
    assert safe_end("abc") == 3
    assert safe_end("ab\\") == 2
    assert safe_end("ab\\\\") == 4
    assert safe_end("a\\u12") == 1
    assert safe_end("a\\u1234b") == 8
    assert safe_end("a\\ud800\\u") == 1
    assert safe_end("a\\ud800x12345") == 13


def test_answer_streams_and_ends_at_its_quote() -> None:
    text = reply("Answering.", "none", 'Line one\nsays "hi" \\ and \u00e9\U0001F600.') + "\n"
    seen = stream(text, list(range(1, len(text))))
    assert seen[-1] == ("Answering.", 'Line one\nsays "hi" \\ and \u00e9\U0001F600.')
    assert [s[1] for s in seen].count(None) == text.index('"finalAnswer": "') + 15


@settings(max_examples=300, deadline=None)
@given(thought=st.text(max_size=40), answer=st.text(max_size=300),
       cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=40),
       ascii=st.booleans())
def test_any_chunking_gives_the_answer_and_only_prefixes_of_it(
        thought: str, answer: str, cuts: list[int], ascii: bool) -> None:
    text = reply(thought, "none", answer, ascii)   # ascii: \uXXXX escapes, surrogate pairs
    seen = stream(text, [c for c in cuts if c < len(text)])
    assert seen[-1] == (thought, answer)
    for _, so_far in seen:
        assert so_far is None or answer.startswith(so_far)


def test_a_model_that_escapes_badly_still_shows_text() -> None:
    streamed = StreamedReply()
    streamed.feed('{"toolName": "none", "finalAnswer": "bad \\x escape')
    assert streamed.answer() == "bad \\x escape"
    assert streamed.field("toolName") == "none"


@settings(max_examples=300, deadline=None)
@given(thought=st.text(max_size=60), answer=st.text(max_size=80),
       before=st.sampled_from(["", " ", "\n  ", "\t"]), after=st.sampled_from(["", " ", "\n "]),
       cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=60))
def test_the_answer_is_found_however_the_key_and_its_colon_are_cut(
        thought: str, answer: str, before: str, after: str, cuts: list[int]) -> None:
    # The answer's key is looked for only in what arrived since the last chunk: a key,
    # its colon or its opening quote cut across chunks, with a model's own spacing, and
    # a thought that mentions the key, must still give the answer and only it.
    text = ('{"thought": %s, "toolName": "none", "finalAnswer"%s:%s%s}'
            % (json.dumps(thought + ' "finalAnswer": "not this"'), before, after,
               json.dumps(answer)))
    seen = stream(text, [c for c in cuts if c < len(text)])
    assert seen[-1] == (thought + ' "finalAnswer": "not this"', answer)
    for _, so_far in seen:
        assert so_far is None or answer.startswith(so_far)


def test_a_key_that_is_not_followed_by_a_string_gives_no_answer() -> None:
    streamed = StreamedReply()
    for piece in ['{"thought": "x", "final', 'Answer"', ': 42, "toolName": "none"}']:
        streamed.feed(piece)
    assert streamed.answer() is None and streamed.field("toolName") == "none"
