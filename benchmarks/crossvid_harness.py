"""Harness overhead of `agentcvr eval crossvid`: a full 9,015-item run (items synthesized in the official format,
per-task counts as published, media stubbed by tiny files) against a local stub OpenAI server, concurrency 64.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/crossvid_harness.py [--items 9015] [--concurrency 64]

The stub server runs in its own process and answers at once (a letter, an interval, an order, or a CCQA judgement),
so the run measures what the harness adds: loading and media checks, frame sampling (tiny clips; their frames are
cached by content after the first decode), request building, HTTP, retries bookkeeping, JSONL appends, scoring, the
progress bar and the report. Rows:
- baseline: the same number of chat requests, bodies of the same size, sent by a bare httpx loop at the same
  concurrency (what any client pays for the server round trip);
- harness: the full `run_items` with the single-pass predictor and the CCQA judge, then the report.
Figures: items/s, wall ms per item, harness CPU ms per item (this process only; the server is another process), and
the harness's wall overhead over the baseline per item (target <= 5 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import shutil
import socket
import tempfile
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

os.environ.setdefault("OMP_NUM_THREADS", "1")

COUNTS = {
    "BU": 848,
    "NC": 1221,
    "CC": 798,
    "PEA": 953,
    "PI": 251,
    "FSA": 2248,
    "PSS": 664,
    "MSR": 594,
    "MOC": 566,
    "CCQA": 872,
}
JUDGEMENT = '<score>{"coverage": [true, false, true], "correctness": [true, false, false]}</score>'


# --- the stub server (own process) ---------------------------------------------------------------------------------


async def _app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    text = body.decode("utf-8", "replace")
    if '"You are a helpful assistant."' in text:
        content = JUDGEMENT
    elif "Timestamps of frames" in text:
        content = "4,8"
    elif "shuffled segments" in text:
        content = "1->2->3"
    else:
        content = "A"
    reply = {
        "id": "x",
        "object": "chat.completion",
        "model": "stub",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
    data = json.dumps(reply).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": data})


def _serve(port: int) -> None:
    import uvicorn

    uvicorn.run(_app, host="127.0.0.1", port=port, log_level="error", access_log=False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- synthesized items ------------------------------------------------------------------------------------------------


def synthesize(root: Path, total: int, seed: int = 0) -> None:
    """Items in the official layout; every video a copy of one 12 s 64x48 clip, UAV views 10 folders of 80 PNGs."""
    from eval.crossvid.sample_tree import tiny_video, write_uav

    rng = random.Random(seed)
    scale = total / sum(COUNTS.values())
    clip = tiny_video(root / "videos" / "clip.mp4")
    letters = "ABCD"
    files: set[str] = set()

    def video(kind: str) -> str:
        name = f"{kind}/{rng.randrange(400)}.mp4"  # a few hundred distinct files per domain
        files.add(name)
        return name

    (root / "QA").mkdir(parents=True, exist_ok=True)
    for task, count in COUNTS.items():
        rows = []
        for i in range(max(1, round(count * scale))):
            options = [f"{c}. option {c}" for c in letters]
            if task in ("BU", "NC", "CC"):
                n = 3 if task == "BU" and i % 2 else 4
                row = {
                    "question": "Which?",
                    "videos": [video(task.lower()) for _ in range(n)],
                    "options": options[:n],
                    "answer": ["A"] if task == "BU" else "A",
                    "duration": [12.0] * n,
                }
            elif task == "PEA":
                row = {
                    "question": "Which?",
                    "options": options,
                    "answer": "B",
                    "videos": [video("assembly") for _ in range(3)],
                    "begin": [1, 2, 0],
                    "end": [9, 10, 8],
                    "duration": [12.0] * 3,
                }
            elif task == "PI":
                row = {
                    "options": [f"{c}. o" for c in "ABCDEF"],
                    "video": video("movie"),
                    "beginning": [0, 4],
                    "ending": [8, 12],
                    "answer": "A",
                    "duration": 12.0,
                }
            elif task == "FSA":
                row = {
                    "video A": video("cook"),
                    "video B": video("cook"),
                    "ref_segment": [2, 5],
                    "answer": [4, 9],
                    "duration": [12.0, 12.0],
                }
            elif task == "PSS":
                row = {
                    "video": video("cook"),
                    "segments": {"1": [[0, 3]], "2": [[4, 6], [7, 8]], "3": [[9, 11]]},
                    "answer": "1->2->3",
                    "duration": 12.0,
                }
            elif task in ("MSR", "MOC"):
                objects = [{"id": 7 + k, "label": "car"} for k in range(5)]
                row = {
                    "question": "Where is {A1} when {B4} leaves?",
                    "options": options,
                    "answer": "A",
                    "objects": objects,
                    "vid": i % 10,
                }
            else:
                row = {
                    "video A": video("cook"),
                    "video B": video("cook"),
                    "question": "How do they differ?",
                    "answer": "A uses a sieve.",
                    "scoring_points": ["tool", "order", "heat"],
                    "duration": [12.0, 12.0],
                }
            rows.append({"id": i, **row})
        (root / "QA" / f"{task}.json").write_text(json.dumps(rows))
    for name in files:
        target = root / "videos" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            os.link(clip, target)
    for vid in range(10):
        write_uav(root, vid)


# --- the two measurements ---------------------------------------------------------------------------------------------


async def baseline(url: str, count: int, concurrency: int, body: dict) -> float:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        semaphore = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with semaphore:
                response = await client.post(url + "/chat/completions", json=body)
                response.raise_for_status()
                response.json()["choices"][0]["message"]["content"]

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(count)))
        return time.perf_counter() - started


def harness(root: Path, url: str, concurrency: int, out: Path, cache: Path) -> tuple[int, float, dict]:
    from agentcvr.spec import Component, RunSpec
    from eval.crossvid.judge import Judge, judged
    from eval.crossvid.loader import load_crossvid, missing_media
    from eval.crossvid.report import write_report
    from eval.crossvid.single_pass import SinglePassPredictor
    from eval.runner import RunConfig, run_items

    async def main():
        predictor = SinglePassPredictor(url, "stub", cache_dir=cache)
        judge = Judge(url, "stub")
        try:
            return await run_items(
                items,
                predictor,
                out,
                RunConfig(concurrency=concurrency),
                spec=RunSpec(policy=Component(name="single-pass", options={"model": "stub"})),
                grade=judged(judge),
                console=Console(stderr=True, quiet=True),
            )
        finally:
            await predictor.aclose()
            await judge.aclose()

    started = time.perf_counter()
    items, _ = load_crossvid(root)
    assert not missing_media(items)
    records = asyncio.run(main())
    write_report({"bench": records}, out.with_suffix(".md"))
    return len(records), time.perf_counter() - started, {"failed": sum(r.status != "ok" for r in records)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=sum(COUNTS.values()))
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    console = Console()
    work = Path(tempfile.mkdtemp(prefix="crossvid-bench-"))
    port = _free_port()
    server = multiprocessing.get_context("spawn").Process(target=_serve, args=(port,), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(100):
            try:
                httpx.post(url + "/chat/completions", json={}, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        synthesize(work / "cv", args.items)
        from eval.crossvid.frames import FrameCache
        from eval.crossvid.loader import load_crossvid
        from eval.crossvid.single_pass import build_request, content_parts

        items, _ = load_crossvid(work / "cv", tasks=["NC"])
        prompt, frames = build_request(items[0], FrameCache(None))
        body = {
            "model": "stub",
            "messages": [{"role": "user", "content": content_parts(prompt, frames)}],
            "temperature": 0.0,
        }
        body_kb = len(json.dumps(body)) / 1024
        n = args.items + COUNTS["CCQA"] * args.items // sum(COUNTS.values())  # the judge's calls too
        base_seconds = asyncio.run(baseline(url, n, args.concurrency, body))
        cpu_before = time.process_time()
        count, seconds, extra = harness(work / "cv", url, args.concurrency, work / "run.jsonl", work / "frames")
        cpu = time.process_time() - cpu_before
    finally:
        server.terminate()
        server.join()
    table = Table(
        title=f"CrossVid harness: {count} items, concurrency {args.concurrency}, request body {body_kb:.0f} KiB"
    )
    for column in ("run", "requests", "seconds", "items/s", "wall ms/item", "CPU ms/item"):
        table.add_column(column, justify="right")
    table.add_row(
        "baseline (bare httpx)",
        str(n),
        f"{base_seconds:.1f}",
        f"{n / base_seconds:.0f}",
        f"{1000 * base_seconds / n:.2f}",
        "",
    )
    table.add_row(
        "harness (run_items)",
        str(n),
        f"{seconds:.1f}",
        f"{count / seconds:.0f}",
        f"{1000 * seconds / count:.2f}",
        f"{1000 * cpu / count:.2f}",
    )
    console.print(table)
    overhead = 1000 * (seconds - base_seconds * count / n) / count
    ratio = seconds / base_seconds
    console.print(f"harness overhead over the bare client: {overhead:.2f} ms/item (target <= 5); ratio {ratio:.2f}x")
    console.print(f"failed items: {extra['failed']}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
