"""The one engine (agentcvr/engine.py): bounded concurrency, retries with backoff, per-try timeout, errors stop."""

from __future__ import annotations

import asyncio

import pytest

from agentcvr.engine import Retry, Unretryable, run_many, with_retries


def test_at_most_concurrency_items_run_at_once_and_every_result_arrives():
    running, peak, seen = 0, 0, []

    async def step(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001)
        running -= 1
        return n * n

    asyncio.run(run_many(range(50), step, concurrency=8, on_result=lambda n, r: seen.append(r), progress=False))
    assert peak == 8 and sorted(seen) == [n * n for n in range(50)]


def test_retries_back_off_then_report_the_last_error():
    calls = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return "ok"

    assert asyncio.run(with_retries(flaky, Retry(tries=3, backoff=0.001))) == ("ok", None, 3)
    calls.clear()
    reply, error, tries = asyncio.run(with_retries(flaky, Retry(tries=2, backoff=0.001)))
    assert reply is None and error == "ConnectionError: reset" and tries == 2


def test_a_try_past_its_timeout_fails_and_unretryable_fails_at_once():
    async def slow() -> str:
        await asyncio.sleep(10)
        return "late"

    async def broken() -> str:
        raise Unretryable("no such video")

    assert asyncio.run(with_retries(slow, Retry(tries=1, timeout=0.01))) == (None, "timed out after 0.01 s", 1)
    assert asyncio.run(with_retries(broken, Retry(tries=5, backoff=0.001))) == (None, "no such video", 1)


def test_an_error_stops_new_items_and_is_raised():
    started = []

    async def step(n: int) -> int:
        started.append(n)
        if n == 1:
            raise ValueError("boom")
        return n

    with pytest.raises(ValueError, match="boom"):
        asyncio.run(run_many(list(range(10)), step, concurrency=1, progress=False))
    assert started == [0, 1]
