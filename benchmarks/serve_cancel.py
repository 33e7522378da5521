"""Cancellation latency of the service with the embedded GGUF master mid-generation: from the moment a run's
request ends (its time limit passes, or its client disconnects) to the moment its run slot is free again.

A real server (`uvicorn --factory serve.app:create_app`, its own process) runs the default master (Qwen2.5-Coder-1.5B,
llama.cpp on CPU) and CPU perception over two rendered videos, with one run slot. For each trial:
- timeout: `/answer` with `AGENTCVR_REQUEST_TIMEOUT` short enough that the master is mid-turn when it passes; the
  reply comes at the deadline, and the slot must be free right after (measured from the reply);
- disconnect: `/answer/stream`, the client closes the connection after the first step event plus a delay (the master
  is then generating its next turn); measured from the close.
"Slot free" is `running == 0` on `/readyz`, polled every 20 ms; the stored trace's status and message are printed.

    .venv/bin/python benchmarks/serve_cancel.py               # 3 trials of each, 1.5B master
    .venv/bin/python benchmarks/serve_cancel.py --trials 5 --timeout 25
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.serve_load import BODY, free_port, wait_ready  # noqa: E402
from tests.rendered import render_facts  # noqa: E402


def slot_free_after(client: httpx.Client, since: float, limit: float = 60.0) -> float:
    """Seconds from `since` (perf_counter) until the server reports no run in progress."""
    while time.perf_counter() - since < limit:
        if client.get("/readyz").json().get("running") == 0:
            return time.perf_counter() - since
        time.sleep(0.02)
    raise SystemExit(f"the slot was still taken {limit:.0f} s after the request ended")


def stored(client: httpx.Client, trace_id: str) -> dict:
    deadline = time.time() + 30
    while (trace := client.get(f"/traces/{trace_id}").json())["status"] == "running" and time.time() < deadline:
        time.sleep(0.1)
    return trace


def timeout_trial(client: httpx.Client, k: int) -> tuple[float, dict]:
    body = {**BODY, "question": f"{BODY['question']} #t{k}", "max_turns": 20}
    reply = client.post("/answer", json=body, timeout=600).json()
    ended = time.perf_counter()
    return slot_free_after(client, ended), stored(client, reply["trace_id"]) | {"reply_status": reply["status"]}


def disconnect_trial(url: str, client: httpx.Client, k: int, delay: float) -> tuple[float, dict]:
    body = {**BODY, "question": f"{BODY['question']} #d{k}", "max_turns": 20}
    trace_id = None
    streaming = httpx.Client(base_url=url, timeout=600)
    with streaming, streaming.stream("POST", "/answer/stream", json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data:") and trace_id is None:
                trace_id = json.loads(line[5:])["trace_id"]
            if line.startswith("event: step"):
                time.sleep(delay)  # the master is now generating its next turn
                break
    ended = time.perf_counter()  # the stream is closed: the client is gone
    assert trace_id is not None
    return slot_free_after(client, ended), stored(client, trace_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=30.0, help="the server's request timeout, s")
    parser.add_argument("--delay", type=float, default=3.0, help="s after the first step before disconnecting")
    parser.add_argument("--policy", default="gguf")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-cancel-") as folder:
        work = Path(folder)
        _, episode, _ = render_facts(work)
        media = work / "media"
        media.mkdir()
        for name, ref in zip(("cat.mp4", "dog.mp4"), episode.videos[:2], strict=True):
            (media / name).write_bytes(Path(ref.path).read_bytes())
        port = free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "AGENTCVR_POLICY": args.policy,
            "AGENTCVR_MEDIA_ROOT": str(media),
            "AGENTCVR_TRACE_DIR": str(work / "traces"),
            "AGENTCVR_UPLOAD_DIR": str(work / "uploads"),
            "AGENTCVR_MAX_CONCURRENT": "1",
            "AGENTCVR_REQUEST_TIMEOUT": str(args.timeout),
        }
        command = [sys.executable, "-m", "uvicorn", "--factory", "serve.app:create_app", "--port", str(port)]
        server = subprocess.Popen([*command, "--log-level", "warning"], env=env, cwd=ROOT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_ready(url)
            print(f"server: policy {args.policy}, 1 run slot, request timeout {args.timeout:g} s")
            rows: dict[str, list[float]] = {"timeout": [], "disconnect": []}
            with httpx.Client(base_url=url, timeout=60) as client:
                for k in range(args.trials):
                    for kind in ("timeout", "disconnect"):
                        if kind == "timeout":
                            seconds, trace = timeout_trial(client, k)
                        else:
                            seconds, trace = disconnect_trial(url, client, k, args.delay)
                        rows[kind].append(seconds)
                        print(
                            f"{kind:10s} trial {k + 1}: slot free {seconds:.2f} s after the request ended; stored "
                            f"status {trace['status']}, {len(trace['steps'])} steps, message {trace['message']!r}"
                        )
            for kind, values in rows.items():
                print(
                    f"{kind:10s}: median {statistics.median(values):.2f} s, max {max(values):.2f} s "
                    f"over {len(values)} trials (target < 2 s)"
                )
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
