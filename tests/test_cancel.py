"""`agentcvr.cancel`: a token set from another thread stops the work that waits or loops on its behalf."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentcvr import cancel
from agentcvr.cancel import Cancelled, CancelToken


def later(seconds: float, action) -> None:
    threading.Timer(seconds, action).start()


def test_a_token_says_why_and_is_not_an_ordinary_error():
    token = CancelToken()
    seen = []
    with token.on_cancel(lambda: seen.append("called")):
        token.cancel("timeout")
    token.cancel("cancelled")  # the first reason stands
    with pytest.raises(Cancelled) as stopped:
        try:
            token.check()
        except Exception:  # the loop's handlers for a failing policy or tool must not swallow it
            pytest.fail("Cancelled was caught as an Exception")
    assert stopped.value.reason == "timeout" and seen == ["called"]
    with token.on_cancel(lambda: seen.append("at once")):  # registered after the fact: runs at once
        pass
    assert seen == ["called", "at once"]


def test_wait_returns_when_the_run_stops_not_when_the_job_ends():
    token, gate = CancelToken(), threading.Event()
    with ThreadPoolExecutor(2) as pool, cancel.scope(token):
        stuck = pool.submit(gate.wait, 30)  # a job that does not look at the token
        later(0.2, lambda: token.cancel("cancelled"))
        with pytest.raises(Cancelled, match="cancelled"):
            cancel.wait(stuck)
        assert not stuck.done()  # the run stopped waiting; it did not wait for the job
        gate.set()
        checking = pool.submit(cancel.bound(cancel.check))  # a job started for the run sees its token
        with pytest.raises(Cancelled):
            checking.result()


def test_wait_outside_a_run_and_its_timeout():
    with ThreadPoolExecutor(1) as pool:
        assert cancel.wait(pool.submit(lambda: 42)) == 42
        cancel.check()  # no run in scope: nothing to stop
        with cancel.scope(CancelToken()), pytest.raises(TimeoutError):
            cancel.wait(pool.submit(threading.Event().wait, 1), timeout=0.1)
