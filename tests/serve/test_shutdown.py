"""A server told to stop (SIGTERM) stops its runs mid-call: the process exits at once instead of waiting for the
master, and the stored trace says the server shut down. The server is its own process here (signals reach only a
main thread), with the OpenAI stub as a master that would take a minute per turn."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from serve.store import TraceStore
from tests.serve.conftest import free_port
from tests.serve.test_answer import BODY

ROOT = Path(__file__).resolve().parents[2]


def test_sigterm_stops_the_runs_and_the_server(media, stub, tmp_path):
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AGENTCVR_POLICY": "openai:stub",
        "AGENTCVR_POLICY_URL": stub.base_url,
        "AGENTCVR_MEDIA_ROOT": str(media),
        "AGENTCVR_TRACE_DIR": str(tmp_path / "traces"),
        "AGENTCVR_UPLOAD_DIR": str(tmp_path / "uploads"),
    }
    command = [sys.executable, "-m", "uvicorn", "--factory", "serve.app:create_app", "--port", str(port)]
    server = subprocess.Popen([*command, "--log-level", "warning"], env=env, cwd=ROOT)
    url, replies = f"http://127.0.0.1:{port}", []
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        glacial = {**BODY, "question": "glacial: which video?"}
        asking = threading.Thread(target=lambda: replies.append(httpx.post(f"{url}/answer", json=glacial, timeout=90)))
        asking.start()
        while httpx.get(f"{url}/readyz", timeout=2).json()["running"] != 1:
            time.sleep(0.05)  # the run has started: its master is in its minute-long call
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)  # before: the process waited for the run (a minute a turn)
        asking.join(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
    assert code in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has shut down gracefully
    assert replies and replies[0].status_code == 200 and replies[0].json()["status"] == "cancelled"
    (row,) = TraceStore(tmp_path / "traces")._db.execute("SELECT body FROM traces").fetchall()
    assert '"message":"the server shut down and the run was stopped"' in row[0].replace(": ", ":")
