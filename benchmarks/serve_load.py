"""Load on the service: N concurrent `POST /answer` while `/healthz` is polled every 50 ms, against a baseline in the
same run (health polled on an idle server, and one `/answer` alone).

The server runs as its own process (`uvicorn --factory serve.app:create_app`), on the embedded stack by default: the
GGUF master and CPU perception (decord + OCR describer + faster-whisper) over two rendered videos. `--policy stub`
puts a local OpenAI-protocol stub in the master's place (observe, listen, answer), for machines where the 0.5B model
on a shared CPU would make a run take minutes.

    .venv/bin/python benchmarks/serve_load.py                       # embedded stack, 8 concurrent, 3 turns each
    .venv/bin/python benchmarks/serve_load.py --policy stub --concurrent 8
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from agentcvr.openai_stub import OpenAIStub
from serve.testing import master, rendered_media, server_process

BODY = {
    "question": "Which video shows a dog running?",
    "options": ["A. Video 1", "B. Video 2"],
    "videos": [{"path": "cat.mp4"}, {"path": "dog.mp4"}],
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def poll_health(client: httpx.AsyncClient, stop: asyncio.Event, period: float = 0.05) -> list[float]:
    """Latencies (s) of /healthz polled every `period` s until `stop`."""
    latencies = []
    while not stop.is_set():
        started = time.perf_counter()
        response = await client.get("/healthz")
        latencies.append(time.perf_counter() - started)
        assert response.status_code == 200
        await asyncio.sleep(max(0.0, period - (time.perf_counter() - started)))
    return latencies


async def answer(client: httpx.AsyncClient, body: dict) -> tuple[float, dict]:
    started = time.perf_counter()
    response = await client.post("/answer", json=body)
    return time.perf_counter() - started, response.json() | {"http": response.status_code}


async def measure(url: str, concurrent: int, max_turns: int, idle_seconds: float) -> None:
    body = {**BODY, "max_turns": max_turns}
    async with httpx.AsyncClient(base_url=url, timeout=1800) as client:
        stop = asyncio.Event()
        poller = asyncio.create_task(poll_health(client, stop))
        await asyncio.sleep(idle_seconds)
        stop.set()
        idle = await poller
        single, _ = await answer(client, body)  # also warms the caches the concurrent runs share
        stop = asyncio.Event()
        poller = asyncio.create_task(poll_health(client, stop))
        started = time.perf_counter()
        # distinct questions: each run's observe is described afresh, not served from the perception cache
        bodies = [{**body, "question": f"{body['question']} #{i}"} for i in range(concurrent)]
        results = await asyncio.gather(*(answer(client, b) for b in bodies))
        wall = time.perf_counter() - started
        stop.set()
        loaded = await poller
    seconds = [s for s, _ in results]
    statuses = [r["status"] for _, r in results]
    answered = sum(r["http"] == 200 and r.get("answer") is not None for _, r in results)
    ms = lambda s: f"{1000 * s:.1f} ms"  # noqa: E731
    print(f"healthz idle  : n={len(idle)} p50 {ms(percentile(idle, 50))} p99 {ms(percentile(idle, 99))}")
    print(
        f"healthz load  : n={len(loaded)} p50 {ms(percentile(loaded, 50))} p99 {ms(percentile(loaded, 99))} "
        f"max {ms(max(loaded))} (p99 {percentile(loaded, 99) / percentile(idle, 99):.2f}x idle; target <= 50 ms)"
    )
    print(f"/answer alone : {single:.2f} s")
    print(
        f"/answer x{concurrent}   : p50 {statistics.median(seconds):.2f} s, p95 {percentile(seconds, 95):.2f} s, "
        f"wall {wall:.2f} s; answered {answered}/{concurrent}; statuses {sorted(set(statuses))} "
        f"(p50 ratio to alone {statistics.median(seconds) / single:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="gguf", help="gguf (embedded, default) or stub")
    parser.add_argument("--concurrent", type=int, default=8)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--max-concurrent", type=int, default=2, help="the server's run slots")
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="serve-load-") as folder:
        run(Path(folder), args)


def run(work: Path, args: argparse.Namespace) -> None:
    """Render the videos into `work`, start the server on them and measure."""
    media = rendered_media(work)
    settings = {"max_concurrent": args.max_concurrent, "max_queue": args.concurrent, "queue_timeout": 1800}
    with OpenAIStub() as stub:
        stub.always(master)
        if args.policy == "stub":
            settings |= {"policy": "openai:stub", "policy_url": stub.base_url}
        with server_process(work, media, **settings) as (url, _):
            print(f"server: policy {args.policy}, {args.max_concurrent} run slots, perception real (CPU)")
            asyncio.run(measure(url, args.concurrent, args.max_turns, args.idle_seconds))


if __name__ == "__main__":
    main()
