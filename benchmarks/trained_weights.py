"""A LoRA master's two llama.cpp weights, on the same simulated episodes: the registry's Q4_1 base with the adapter
applied per layer (`weights=lora`, the packed form) against the adapter merged into a Q8_0 copy of the base
(`weights=merged`, the default), each as `--policy trained` runs it (the shipped reader answering the choice tasks).

    .venv/bin/python benchmarks/trained_weights.py --master looker-v5 --n 1 --seed 31 --threads 2

Each episode runs once per weights, one after the other on the same threads, through the one loop with the rule
simulator. Printed: seconds per episode, per policy turn and per prompt token llama.cpp read (the master's time is
mostly reading its observations), the speed ratio, success (official scoring) of each, and how often the two made the
same calls and gave the same answer (the merged matrices are requantized, so a near tie can flip).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from rich.console import Console
from rich.table import Table

from agentcvr.agent import Agent
from agentcvr.components import make_policy
from agentcvr.interfaces import Limits
from agentcvr.policies.read_answers import ReaderAnswers
from agentcvr.policies.trained_gguf import TrainedGGUFPolicy
from agentcvr.tasks import TASK_ORDER, get_task
from agentcvr.trace import EpisodeResult
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator

WEIGHTS = ("lora", "merged")


def calls(result: EpisodeResult) -> list[tuple]:
    return [(step.tool, sorted(step.arguments.items())) for step in result.steps if step.kind == "tool"]


class Counting:
    """Wraps a TrainedGGUFPolicy's llama.cpp server to add up the prompt tokens it read (not those its cache held)."""

    def __init__(self, policy: TrainedGGUFPolicy):
        self.server, self.read = policy.server, 0
        policy.server = self

    def __getattr__(self, name):
        return getattr(self.server, name)

    def handle_completions(self, request, callback):
        last: dict = {}

        def counted(chunk):
            if isinstance(chunk, dict) and chunk.get("timings"):
                last.update(chunk["timings"])  # the request's timings, complete in its last chunk
            return callback(chunk)

        answer = self.server.handle_completions(request, counted)
        self.read += int(last.get("prompt_n") or 0)
        return answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--master", default="looker-v5", help="a shipped LoRA master or a packed master folder")
    parser.add_argument("--n", type=int, default=1, help="episodes per task kind")
    parser.add_argument("--seed", type=int, default=31, help="gen-scripts seed of the episodes")
    parser.add_argument("--task", action="append", help="task kinds (repeatable); default all ten")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads of each")
    parser.add_argument("--max-turns", type=int, default=20)
    args = parser.parse_args()
    console = Console()
    scripts = [generate_one(task, i, args.seed) for task in args.task or TASK_ORDER for i in range(args.n)]
    table = {s.id: s for s in scripts}
    simulator = ScriptSimulator(table)
    policies, counters = {}, {}
    for weights in WEIGHTS:
        policy = make_policy(f"trained:{args.master}", table, threads=args.threads, weights=weights)
        inner = policy.master if isinstance(policy, ReaderAnswers) else policy
        counters[weights] = Counting(inner)
        policies[weights] = policy
    seconds = dict.fromkeys(WEIGHTS, 0.0)
    turns = dict.fromkeys(WEIGHTS, 0)
    success = dict.fromkeys(WEIGHTS, 0.0)
    results: dict[str, list[EpisodeResult]] = {w: [] for w in WEIGHTS}
    for script in scripts:
        for weights, policy in policies.items():
            started = time.perf_counter()
            result = Agent(policy, simulator, Limits(max_turns=args.max_turns)).run(script.episode)
            seconds[weights] += time.perf_counter() - started
            turns[weights] += sum(1 for step in result.steps if step.policy_seconds > 0)
            task = get_task(script.task)
            success[weights] += task.official(result.answer, script.episode) if result.answer else 0.0
            results[weights].append(result)
        console.print(f"{script.task} {script.id}: " + " | ".join(f"{r[-1].answer!s:.40}" for r in results.values()))
    pairs = list(zip(*results.values(), strict=True))
    same_calls = sum(calls(a) == calls(b) for a, b in pairs) / len(pairs)
    same_answer = sum(a.answer == b.answer for a, b in pairs) / len(pairs)
    out = Table(title=f"{args.master}: {len(scripts)} episodes (seed {args.seed}), {args.threads} threads each")
    for column in ("weights", "s/episode", "s/turn", "prompt tokens read", "ms/prompt token", "success %"):
        out.add_column(column)
    for weights in WEIGHTS:
        read = counters[weights].read
        out.add_row(
            weights,
            f"{seconds[weights] / len(scripts):.2f}",
            f"{seconds[weights] / max(1, turns[weights]):.2f}",
            str(read),
            f"{1000 * seconds[weights] / max(1, read):.2f}",
            f"{100 * success[weights] / len(scripts):.1f}",
        )
    console.print(out)
    console.print(
        f"merged is {seconds['lora'] / seconds['merged']:.2f}x the speed of lora per episode; same calls in "
        f"{same_calls:.0%} of episodes, same answer in {same_answer:.0%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
