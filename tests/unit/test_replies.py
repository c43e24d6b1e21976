"""The Python reply table (py_agent.replies): ids, replies matched by id, a timeout per
request, cancellation, and closing that never waits."""

from __future__ import annotations

import asyncio
import time

import pytest

from py_agent.replies import ChannelClosedError, Replies
from py_agent.waiting import DeadlineExceeded
from tests.unit.support import run


class Channel:
    """The other side of a channel: keeps what was sent, answers when told to."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, request_id: str) -> None:
        self.sent.append(request_id)


def test_each_request_gets_a_fresh_id_and_the_reply_with_that_id():
    table, channel = Replies("llm"), Channel()

    async def scenario():
        first = asyncio.ensure_future(table.request(channel.send, timeout=1))
        second = asyncio.ensure_future(table.request(channel.send, timeout=1))
        await asyncio.sleep(0)
        assert channel.sent == ["llm1", "llm2"] and len(table) == 2
        # Replies in the other order, each reaching its own request.
        assert table.settle({"id": "llm2", "ok": True, "value": "two"})
        assert table.settle({"id": "llm1", "ok": False, "error": {"name": "X"}})
        return await first, await second

    first, second = run(scenario())
    assert first == {"id": "llm1", "ok": False, "error": {"name": "X"}}
    assert second["value"] == "two"
    assert len(table) == 0


def test_a_reply_nobody_waits_for_is_ignored():
    table = Replies()

    async def scenario():
        assert not table.settle({"id": "r1", "ok": True})      # never asked
        assert not table.settle({"ok": True})                  # no id at all
        pending = table.expect()
        assert table.settle({"id": pending.id, "ok": True, "value": 1})
        assert not table.settle({"id": pending.id, "ok": True, "value": 2})   # twice
        return await pending.wait(1)

    assert run(scenario())["value"] == 1


def test_a_request_past_its_timeout_fails_and_its_late_reply_is_dropped():
    table, channel = Replies(), Channel()

    async def scenario():
        started = time.perf_counter()
        with pytest.raises(DeadlineExceeded):
            await table.request(channel.send, timeout=0.05)
        took = time.perf_counter() - started
        assert "r1" not in table
        assert not table.settle({"id": "r1", "ok": True})
        return took

    assert run(scenario()) < 1.0


def test_no_timeout_waits_for_the_reply():
    table, channel = Replies(), Channel()

    async def scenario():
        waiting = asyncio.ensure_future(table.request(channel.send))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        table.settle({"id": channel.sent[0], "ok": True, "value": "late but welcome"})
        return await waiting

    assert run(scenario())["value"] == "late but welcome"


def test_a_cancelled_wait_leaves_the_table_and_says_it_was_not_settled():
    table = Replies()

    async def scenario():
        pending = table.expect()
        waiting = asyncio.ensure_future(pending.wait(5))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert pending.id not in table and not pending.settled
        assert not table.settle({"id": pending.id, "ok": True})

        answered = table.expect()
        waiting = asyncio.ensure_future(answered.wait(None))
        await asyncio.sleep(0)
        table.settle({"id": answered.id, "ok": True})
        waiting.cancel()   # the reply came first: nothing is left to stop
        await asyncio.gather(waiting, return_exceptions=True)

        failed = table.expect()
        waiting = asyncio.ensure_future(failed.wait(5))
        await asyncio.sleep(0)
        table.fail_all(ConnectionError("gone"))   # failed by the table: settled too
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        return answered.settled, failed.settled

    assert run(scenario()) == (True, True)


def test_fail_all_fails_every_waiting_request_at_once():
    table, channel = Replies(), Channel()

    async def scenario():
        waits = [asyncio.ensure_future(table.request(channel.send, timeout=30))
                 for _ in range(3)]
        await asyncio.sleep(0)
        started = time.perf_counter()
        table.fail_all(ConnectionError("the worker was restarted"))
        results = await asyncio.gather(*waits, return_exceptions=True)
        return results, time.perf_counter() - started

    results, took = run(scenario())
    assert [type(r) for r in results] == [ConnectionError] * 3 and took < 0.5
    assert len(table) == 0
    # The table is still usable: fail_all is not close.
    assert run(_one_round_trip(table))["value"] == "ok"


async def _one_round_trip(table: Replies):
    pending = table.expect()
    table.settle({"id": pending.id, "ok": True, "value": "ok"})
    return await pending.wait(1)


def test_close_fails_waiting_requests_and_refuses_new_ones():
    table, channel = Replies(), Channel()

    async def scenario():
        waiting = asyncio.ensure_future(table.request(channel.send, timeout=30))
        await asyncio.sleep(0)
        table.close()
        with pytest.raises(ChannelClosedError):
            await waiting
        with pytest.raises(ChannelClosedError):
            await table.request(channel.send, timeout=30)
        return channel.sent

    assert run(scenario()) == ["r1"]   # the refused request was never sent


def test_a_send_that_fails_leaves_nothing_waiting():
    table = Replies()

    def broken(request_id: str) -> None:
        raise RuntimeError("the port is gone")

    async def scenario():
        with pytest.raises(RuntimeError, match="the port is gone"):
            await table.request(broken, timeout=1)
        return len(table)

    assert run(scenario()) == 0
