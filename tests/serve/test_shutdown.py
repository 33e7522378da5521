"""A server told to stop (SIGTERM) stops its runs mid-call: the process exits at once instead of waiting for the
master, and the stored trace says the server shut down. The server is its own process here (signals reach only a
main thread), with the OpenAI stub as a master that would take a minute per turn."""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest

from serve.store import TraceStore
from serve.testing import server_process
from tests.serve.test_answer import BODY


@pytest.mark.slow  # a server process of its own: ~5 s
def test_sigterm_stops_the_runs_and_the_server(media, stub, tmp_path):
    replies = []
    with server_process(tmp_path, media, policy="openai:stub", policy_url=stub.base_url) as (url, server):
        glacial = {**BODY, "question": "glacial: which video?"}
        asking = threading.Thread(target=lambda: replies.append(httpx.post(f"{url}/answer", json=glacial, timeout=90)))
        asking.start()
        while httpx.get(f"{url}/readyz", timeout=2).json()["running"] != 1:
            time.sleep(0.05)  # the run has started: its master is in its minute-long call
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)  # before: the process waited for the run (a minute a turn)
        asking.join(timeout=30)
    assert code in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has shut down gracefully
    assert replies and replies[0].status_code == 200 and replies[0].json()["status"] == "cancelled"
    (row,) = TraceStore(tmp_path / "traces")._db.execute("SELECT body FROM traces").fetchall()
    assert '"message":"the server shut down and the run was stopped"' in row[0].replace(": ", ":")
