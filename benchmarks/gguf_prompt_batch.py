"""What the embedded master's prompt batch (`GGUFPolicy(prompt_batch=...)`, `gguf.PROMPT_BATCH`) costs and buys: prompt
reading speed, and how long a run told to stop waits while the master reads a long observation.

One llama.cpp server per batch size over the same GGUF file (weights are memory-mapped, so they are shared), all
loaded at once and asked in turn, round after round, so every size sees the same load. Per round and size:
- speed: a fresh (uncached) prompt of about `--prompt-tokens` tokens, one output token; llama.cpp's own prompt
  tokens/s, and its ratio against the largest size in the same round (the median over rounds is printed: a shared
  machine's load moves between rounds more than within one);
- stop: the same prompt again, under a `CancelToken` set from another thread at a random moment while it is read;
  seconds from `cancel()` to `completion()` raising `Cancelled` (what a server's timeout or disconnect waits for).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/gguf_prompt_batch.py                 # 1.5B master, 1 thread
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/gguf_prompt_batch.py --batches 16 32 64 128 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import threading
import time
from pathlib import Path

from agentcvr import cancel
from agentcvr.models import DEFAULT_MASTER, ensure_model
from agentcvr.policies.gguf import completion, load_llama
from agentcvr.prompts import system_prompt

# An observation as the real perception writes it (timestamped frame descriptions, on-screen text, speech): the
# kind of prompt the master reads in the middle of an episode.
LINES = [
    "[{t:.1f}s - {u:.1f}s] A brown dog runs across a green lawn towards a red ball; a man in a blue jacket watches.",
    "[{t:.1f}s - {u:.1f}s] On-screen text: 'SPRING TRAINING DAY {k}' in white letters on a dark banner.",
    '[{t:.1f}s - {u:.1f}s] Speech: "Good boy, bring it back here, that\'s it, one more time and then we go home."',
    "[{t:.1f}s - {u:.1f}s] A grey cat sits on a windowsill and watches the street; a bus passes in the background.",
]


def observation(tokens: int, nonce: str) -> list[dict]:
    """A system prompt and one observation message of roughly `tokens` tokens (~3 characters a token in this text),
    starting with `nonce` so that no two requests share a cached prefix."""
    system = system_prompt("json", 20)
    lines, k = [], 0
    while sum(len(line) for line in lines) < 3 * tokens - len(system):
        lines.append(LINES[k % len(LINES)].format(t=2.0 * k, u=2.0 * k + 2, k=k))
        k += 1
    return [
        {"role": "system", "content": f"{nonce}\n{system}"},
        {"role": "user", "content": "Result of observe on video 1:\n" + "\n".join(lines)},
    ]


def request(messages: list[dict]) -> dict:
    return {"messages": messages, "max_tokens": 1, "temperature": 0.0, "cache_prompt": False}


def read_speed(server: object, messages: list[dict]) -> tuple[float, int]:
    """(prompt tokens/s, prompt tokens) by llama.cpp's own timings."""
    timings = completion(server, request(messages))["timings"]
    return timings["prompt_per_second"], timings["prompt_n"]


def stop_wait(server: object, messages: list[dict], after: float) -> float:
    """Seconds from setting the token (`after` s into reading the prompt) to the completion raising `Cancelled`."""
    token = cancel.CancelToken()
    stopped: list[float] = []

    def stop() -> None:
        stopped.append(time.perf_counter())
        token.cancel("timeout")

    timer = threading.Timer(after, stop)
    with cancel.scope(token):
        timer.start()
        try:
            completion(server, request(messages))
        except cancel.Cancelled:
            return time.perf_counter() - stopped[0]
        finally:
            timer.cancel()
    raise SystemExit(f"the prompt was read before the stop at {after:.2f} s: raise --prompt-tokens")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MASTER, help="agentcvr.models name or .gguf path")
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--prompt-tokens", type=int, default=600, help="about one observation turn's size")
    parser.add_argument("--seed", type=int, default=0, help="of the stop moments")
    args = parser.parse_args()
    path = Path(args.model) if args.model.endswith(".gguf") else ensure_model(args.model)
    servers = {b: load_llama(path, n_ctx=4096, threads=args.threads, batch=b) for b in sorted(args.batches)}
    rng = random.Random(args.seed)
    batches = sorted(servers)
    reference = batches[-1]
    speeds: dict[int, list[float]] = {b: [] for b in batches}
    ratios: dict[int, list[float]] = {b: [] for b in batches}  # against the reference size in the same round
    waits: dict[int, list[float]] = {b: [] for b in batches}
    print(f"{path.name}, {args.threads} thread(s), prompt batches {batches}, {args.rounds} rounds")
    for r in range(args.rounds):
        for batch in batches[r % len(batches) :] + batches[: r % len(batches)]:  # each size first in turn
            server = servers[batch]
            speed, tokens = read_speed(server, observation(args.prompt_tokens, f"round {r} batch {batch} speed"))
            speeds[batch].append(speed)
            # stop somewhere in the first 80 % of the reading, so the stop always lands mid-prompt
            after = rng.uniform(0.1, 0.8 * tokens / speed)
            waits[batch].append(stop_wait(server, observation(args.prompt_tokens, f"round {r} batch {batch}"), after))
            print(
                f"round {r + 1} batch {batch:4d}: {tokens} prompt tokens at {speed:6.1f} tok/s "
                f"({batch / speed:.2f} s a batch); stopped {after:.2f} s in, raised {waits[batch][-1]:.2f} s later",
                flush=True,
            )
        for batch in batches:
            ratios[batch].append(speeds[batch][-1] / speeds[reference][-1])
    print(f"\nbatch  prompt tok/s (median)  vs {reference} (median of rounds)  s per batch  stop wait median / max (s)")
    for batch in batches:
        median = statistics.median(speeds[batch])
        print(
            f"{batch:5d}  {median:21.1f}  {statistics.median(ratios[batch]):27.2f}  {batch / median:11.2f}  "
            f"{statistics.median(waits[batch]):.2f} / {max(waits[batch]):.2f}"
        )
    print("load average at the end (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
