"""Stopping a run from outside it: a `CancelToken` in scope for the run's thread, checked where the work waits.

A server runs each episode in a worker thread inside `with cancel.scope(token):`; when the request ends (timeout,
client gone, shutdown) it calls `token.cancel(reason)`, and the work in progress notices within one step of its own
loop: the embedded llama.cpp master between tokens (and between prompt batches), a remote master by dropping its
HTTP call, perception between frames and audio segments. The token travels as a context variable, so the `Policy`
and `Perception` protocols keep their signatures; worker pools that run on behalf of a run copy the context.

    token = CancelToken()
    with cancel.scope(token):
        agent.run(episode)  # raises Cancelled("timeout") soon after another thread calls token.cancel("timeout")
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


class Cancelled(BaseException):  # noqa: N818 (named like asyncio.CancelledError, and a BaseException for the same reason)
    """The run was told to stop; `reason` is why (`timeout`, `cancelled`, `shutdown`). A BaseException, so the loop's
    `except Exception` handlers (a policy or tool failing) do not record it as the model's or perception's error."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class CancelToken:
    """A stop flag with a reason, set once from any thread; callbacks run when it is set (or at once if it is)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    def cancel(self, reason: str = "cancelled") -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise `Cancelled` if the token is set."""
        if self._event.is_set():
            raise Cancelled(self.reason or "cancelled")

    @contextmanager
    def on_cancel(self, callback: Callable[[], None]) -> Iterator[None]:
        """Run `callback` if the token is set while the block runs (to abort a blocking call)."""
        with self._lock:
            registered = not self._event.is_set()
            if registered:
                self._callbacks.append(callback)
        if not registered:
            callback()
        try:
            yield
        finally:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)


_current: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("agentcvr_cancel", default=None)


def current() -> CancelToken | None:
    """The token of the run this thread works for, if any."""
    return _current.get()


@contextmanager
def scope(token: CancelToken) -> Iterator[CancelToken]:
    """Make `token` the current one for the block (and for work started with `bound` inside it)."""
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


def check() -> None:
    """Raise `Cancelled` if the current run was told to stop; free where no run is in scope."""
    token = _current.get()
    if token is not None:
        token.check()


def bound(work: Callable[[], T]) -> Callable[[], T]:
    """`work` running in this thread's context (its token included), for a pool thread to run."""
    context = contextvars.copy_context()
    return lambda: context.run(work)


def wait(future: Future[T], timeout: float | None = None) -> T:
    """`future.result(timeout)`, but raising `Cancelled` (and cancelling the future: an asyncio task behind it stops,
    a pool job already running sees the token itself) as soon as the current run is told to stop."""
    token = _current.get()
    if token is None:
        return future.result(timeout)
    woken = threading.Event()
    future.add_done_callback(lambda _: woken.set())
    with token.on_cancel(woken.set):
        finished = woken.wait(timeout)
    if token.cancelled:
        future.cancel()
        raise Cancelled(token.reason or "cancelled")
    if not finished:
        raise FutureTimeout()
    return future.result()
