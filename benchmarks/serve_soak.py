"""Soak: does a long-lived server stay flat? N `/answer` requests against one real server, its memory (RSS) sampled
every 100, and every reply's status counted.

The server runs as its own process (`uvicorn --factory serve.app:create_app`) with real CPU perception (decord +
OCR describer + faster-whisper) over two short rendered videos, and a fast master (`--master`):
- stub: the local OpenAI-protocol stub of the serve tests (observe, listen, answer B) behind the remote-master path
  (an HTTP call per turn). Questions carry one of `--variants` tags, so perception sees that many distinct observe
  calls;
- random: the `random` policy in the server's process, behind the local-master path (`SerialPolicy`): 1-3 observe or
  listen calls on random intervals, new ones every request, so perception's caches keep meeting new keys and stay
  full at their bounds, then a random answer.
Every 10th request uploads its video instead of naming it (uploads are deleted when their run ends). Growth is
measured from the sample after `--warmup` requests to the last one.

    .venv/bin/python benchmarks/serve_soak.py                       # 1000 requests, 4 at a time, stub master
    .venv/bin/python benchmarks/serve_soak.py --master random --requests 1000
    .venv/bin/python benchmarks/serve_soak.py --requests 3000 --concurrent 8
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import tempfile
import time
from pathlib import Path

import httpx
from serve_load import BODY  # a sibling: this script's folder leads sys.path

from agentcvr.openai_stub import OpenAIStub
from serve.testing import master, rendered_media, server_process


def rss_mib(pid: int) -> float:
    """Resident memory of a process, MiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def one(client: httpx.AsyncClient, k: int, variants: int, dog: bytes) -> tuple[int, str]:
    """The reply's HTTP status and its run's status (success, error, timeout; `-` for a reply without one)."""
    question = f"{BODY['question']} #{k % variants}"
    if k % 10 == 9:  # an upload: video 2 sent as a file
        data = {"question": question, "options": BODY["options"], "videos": "cat.mp4"}
        response = await client.post("/answer", data=data, files=[("videos", ("dog.mp4", dog, "video/mp4"))])
    else:
        response = await client.post("/answer", json={**BODY, "question": question})
    run = response.json().get("status", "-") if response.status_code == 200 else "-"
    return response.status_code, run


async def soak(url: str, pid: int, args: argparse.Namespace, dog: bytes) -> tuple[list[tuple[int, float]], dict, dict]:
    statuses: collections.Counter[int] = collections.Counter()
    runs: collections.Counter[str] = collections.Counter()
    samples = [(0, rss_mib(pid))]
    started, done = time.perf_counter(), 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for k in range(args.requests):
        queue.put_nowait(k)

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal done
        while not queue.empty():
            k = queue.get_nowait()
            status, run = await one(client, k, args.variants, dog)
            statuses[status] += 1
            runs[run] += 1
            done += 1
            if done % 100 == 0:
                samples.append((done, rss_mib(pid)))
                print(
                    f"{done:5d} requests  RSS {samples[-1][1]:7.1f} MiB  {time.perf_counter() - started:6.1f} s  "
                    f"statuses {dict(sorted(statuses.items()))}",
                    flush=True,
                )

    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        await asyncio.gather(*(worker(client) for _ in range(args.concurrent)))
    return samples, dict(statuses), dict(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrent", type=int, default=4, help="clients at once")
    parser.add_argument("--max-concurrent", type=int, default=2, help="the server's run slots")
    parser.add_argument("--variants", type=int, default=20, help="distinct questions (observe calls)")
    parser.add_argument("--warmup", type=int, default=200, help="requests before the growth baseline")
    parser.add_argument("--master", choices=["stub", "random"], default="stub", help="the fast master (see above)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-soak-") as folder:
        work = Path(folder)
        media = rendered_media(work)
        with OpenAIStub() as stub:
            stub.always(master)
            settings = {"policy": "openai:stub", "policy_url": stub.base_url} if args.master == "stub" else {}
            settings |= {"policy": "random"} if args.master == "random" else {}
            settings |= {"max_concurrent": args.max_concurrent, "max_queue": args.concurrent, "queue_timeout": 600}
            with server_process(work, media, **settings) as (url, process):
                print(
                    f"server: master {settings['policy']}, perception real (CPU), {args.max_concurrent} run slots; "
                    f"{args.requests} requests, {args.concurrent} at a time, {args.variants} distinct questions"
                )
                samples, statuses, runs = asyncio.run(soak(url, process.pid, args, (media / "dog.mp4").read_bytes()))
        report(samples, statuses, runs, args.warmup, work)


def report(samples: list[tuple[int, float]], statuses: dict, runs: dict, warmup: int, work: Path) -> None:
    base = next(rss for n, rss in samples if n >= warmup)
    last = samples[-1][1]
    errors = sum(count for status, count in statuses.items() if status >= 500)
    uploads = list((work / "uploads").rglob("*"))
    print("RSS series (requests: MiB): " + ", ".join(f"{n}: {rss:.1f}" for n, rss in samples))
    print(
        f"growth after warm-up ({warmup} requests): {base:.1f} -> {last:.1f} MiB = {100 * (last - base) / base:+.2f} % "
        f"(target < 5 %); 5xx: {errors}; statuses {statuses}; runs {runs}; files left in uploads: {len(uploads)}; "
        f"trace store {(work / 'traces' / 'traces.sqlite').stat().st_size / 2**20:.1f} MiB"
    )
    print("load average at the end (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
