"""Runs stop when the server is told to stop (SIGINT/SIGTERM).

uvicorn waits for open requests to finish before it runs the lifespan's shutdown, so a run in progress would hold
the process until its own end (minutes for the embedded master). A signal handler chained in front of uvicorn's
stops every run first: each stores its partial trace ("the server shut down"), its request answers at once, and
uvicorn's graceful shutdown goes on as usual.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def on_exit_signal(loop: asyncio.AbstractEventLoop, stop_runs: Callable[[], None]) -> Iterator[None]:
    """While the block runs, SIGINT/SIGTERM call `stop_runs` on `loop`, then the handler that was there before
    (uvicorn's). Signals reach only the main thread: elsewhere (a server in a test thread) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}

    def handler(sig: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(stop_runs)
        previous = before[sig]
        if callable(previous):
            previous(sig, frame)

    for sig in SIGNALS:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, previous in before.items():
            if signal.getsignal(sig) is handler:
                signal.signal(sig, previous)
