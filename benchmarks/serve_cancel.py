"""Cancellation latency of the service with the embedded GGUF master mid-generation: from the moment a run's
request ends (its time limit passes, or its client disconnects) to the moment its run slot is free again.

A real server (`uvicorn --factory serve.app:create_app`, its own process) runs the default master (Qwen2.5-Coder-1.5B,
llama.cpp on CPU) and CPU perception over two rendered videos, with one run slot. For each trial:
- timeout: `/answer` with `AGENTCVR_REQUEST_TIMEOUT` short enough that the master is mid-turn when it passes; the
  reply comes at the deadline, and the slot must be free right after (measured from the reply);
- disconnect: `/answer/stream`, the client closes the connection after the first step event plus a delay (the master
  is then generating its next turn); measured from the close;
- disconnect-answer: the blocking `/answer`, the client gives up `--delay` s after its first step would have come (as
  timed by the stream trial before it; its read timeout closes the connection); measured from the close.
"Slot free" is `running == 0` on `/readyz`, polled every 20 ms; the stored trace's status, message and last step
(where the stop landed) are printed. Last, shutdown: SIGTERM while a run is mid-turn, timed to the process's exit.

`--policy stub` puts the OpenAI-protocol stub in the master's place: its first turn comes at once, every later one
takes a minute, and a remote call is dropped the moment its run is stopped. What is left is the service's own part
(noticing the timeout or the disconnect, stopping the run, storing its trace), without llama.cpp's compute step.

    .venv/bin/python benchmarks/serve_cancel.py               # 3 trials of each, 1.5B master
    .venv/bin/python benchmarks/serve_cancel.py --trials 5 --threads 1
    .venv/bin/python benchmarks/serve_cancel.py --policy stub --timeout 8 --delay 1
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import httpx
from serve_load import BODY  # a sibling: this script's folder leads sys.path

from agentcvr.openai_stub import OpenAIStub
from serve.store import TraceStore
from serve.testing import master, rendered_media, server_process

KINDS = ("timeout", "disconnect", "disconnect-answer")


def stalling_master(request: dict) -> str:
    """The stub master: its first turn at once, every later one a minute (a run stopped meanwhile drops the call)."""
    if any(m["role"] == "assistant" for m in request["messages"]):
        time.sleep(60)
    return master(request)


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


def disconnect_trial(url: str, client: httpx.Client, k: int, delay: float) -> tuple[float, dict, float]:
    """Also returns the seconds from the request to its first step event."""
    body = {**BODY, "question": f"{BODY['question']} #d{k}", "max_turns": 20}
    trace_id, started, first_step = None, time.perf_counter(), 0.0
    streaming = httpx.Client(base_url=url, timeout=600)
    with streaming, streaming.stream("POST", "/answer/stream", json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data:") and trace_id is None:
                trace_id = json.loads(line[5:])["trace_id"]
            if line.startswith("event: step"):
                first_step = time.perf_counter() - started
                time.sleep(delay)  # the master is now generating its next turn
                break
    ended = time.perf_counter()  # the stream is closed: the client is gone
    assert trace_id is not None
    return slot_free_after(client, ended), stored(client, trace_id), first_step


def disconnect_answer_trial(url: str, client: httpx.Client, k: int, wait: float, work: Path) -> tuple[float, dict]:
    """The blocking `/answer`, given up after `wait` s: the client's read timeout closes the connection."""
    body = {**BODY, "question": f"{BODY['question']} #a{k}", "max_turns": 20}
    try:
        httpx.post(f"{url}/answer", json=body, timeout=httpx.Timeout(600, read=wait))
        raise SystemExit(f"/answer replied within {wait:.1f} s: nothing was left to cancel (lower --delay)")
    except httpx.ReadTimeout:
        ended = time.perf_counter()  # httpx closes the connection on its read timeout: the client is gone
    seconds = slot_free_after(client, ended)
    return seconds, stored(client, stored_id(work, f"#a{k}"))


def stored_id(work: Path, tag: str) -> str:
    """The trace id of the run whose question carries `tag`."""
    (row,) = (
        TraceStore(work / "traces")._db.execute("SELECT body FROM traces WHERE body LIKE ?", (f"%{tag}%",)).fetchall()
    )
    return json.loads(row[0])["trace_id"]


def landed(trace: dict) -> str:
    """Where the run was when it stopped: after which of its steps."""
    if not trace["steps"]:
        return "before its first step"
    last = trace["steps"][-1]
    return f"after step {len(trace['steps'])} ({last.get('tool') or last['kind']})"


def shutdown_trial(url: str, process: subprocess.Popen, work: Path, delay: float) -> tuple[float, dict]:
    """SIGTERM while a run's master generates: seconds until the process has exited, and the stored trace."""
    body = {**BODY, "question": f"{BODY['question']} #shutdown", "max_turns": 20}
    stepped = threading.Event()

    def ask() -> None:
        with httpx.stream("POST", f"{url}/answer/stream", json=body, timeout=600) as response:
            for line in response.iter_lines():
                if line.startswith("event: step"):
                    stepped.set()

    threading.Thread(target=ask, daemon=True).start()
    stepped.wait(600)
    time.sleep(delay)  # the master is mid-turn
    signalled = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    seconds = time.perf_counter() - signalled
    (row,) = TraceStore(work / "traces")._db.execute("SELECT body FROM traces WHERE body LIKE '%#shutdown%'").fetchall()
    return seconds, json.loads(row[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=30.0, help="the server's request timeout, s")
    parser.add_argument("--delay", type=float, default=3.0, help="s after the first step before disconnecting")
    parser.add_argument("--policy", default="gguf", help="the master: gguf (embedded), gguf:FILE or stub")
    parser.add_argument("--threads", type=int, default=None, help="the master's CPU threads (default: all cores)")
    parser.add_argument("--prompt-batch", type=int, default=None, help="the master's prompt batch (default: its own)")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-cancel-") as folder, OpenAIStub() as stub:
        work = Path(folder)
        stub.always(stalling_master)
        # The model alone: with its default reader the embedded master answers a choice question after the scan
        # without generating, and this measures a stop mid-generation.
        settings = {
            "policy": args.policy,
            "policy_reader": "none",
            "max_concurrent": 1,
            "request_timeout": args.timeout,
        }
        if args.policy == "stub":
            settings |= {"policy": "openai:stub", "policy_url": stub.base_url}
        if args.threads:
            settings["policy_threads"] = args.threads
        if args.prompt_batch:
            settings["policy_prompt_batch"] = args.prompt_batch
        with server_process(work, rendered_media(work), **settings) as (url, process):
            print(
                f"server: policy {args.policy} ({args.threads or 'all'} threads, prompt batch "
                f"{args.prompt_batch or 'default'}), 1 run slot, request timeout {args.timeout:g} s"
            )
            rows: dict[str, list[float]] = {kind: [] for kind in args.kinds}
            with httpx.Client(base_url=url, timeout=60) as client:
                first_step = 0.0  # s from a request to its first step, as the last stream trial saw it
                for k in range(args.trials):
                    for kind in args.kinds:
                        if kind == "timeout":
                            seconds, trace = timeout_trial(client, k)
                        elif kind == "disconnect":
                            seconds, trace, first_step = disconnect_trial(url, client, k, args.delay)
                        else:
                            wait = first_step + args.delay
                            seconds, trace = disconnect_answer_trial(url, client, k, wait, work)
                        rows[kind].append(seconds)
                        print(
                            f"{kind:17s} trial {k + 1}: slot free {seconds:.2f} s after the request ended; stored "
                            f"status {trace['status']}, stopped {landed(trace)}, message {trace['message']!r}",
                            flush=True,
                        )
            for kind, values in rows.items():
                print(
                    f"{kind:17s}: median {statistics.median(values):.2f} s, max {max(values):.2f} s "
                    f"over {len(values)} trials (target < 2 s)"
                )
            seconds, trace = shutdown_trial(url, process, work, args.delay)
            print(
                f"shutdown         : the server exited {seconds:.2f} s after SIGTERM with a run mid-turn; stored "
                f"status {trace['status']}, stopped {landed(trace)}, message {trace['message']!r}"
            )
    print("load average at the end (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
