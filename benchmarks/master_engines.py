"""One trained master, two engines: HF `generate` (torch, KV cache) against llama.cpp (the quantized base plus the
LoRA adapter GGUF: `weights="lora"`; `benchmarks/trained_weights.py` compares it with the merged Q8_0 weights that
`--policy trained` runs by default), on the same simulated episodes, one thread each.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/master_engines.py --checkpoint runs/smol-all/warmstart \
        --master agentcvr/masters/looker-v5 --n 2 --seed 12

`--checkpoint` is a LoRA warm start's folder (its merged weights run in torch), `--master` the same warm start packed
(`agentcvr pack-master`). Each episode runs once per engine through the one loop with the rule simulator and no reader
(the master's own turns are what differ). Printed: seconds per episode and per generated token for each engine, the
speed ratio, and how often the two engines made the same calls and the same answer (the adapter runs over the Q4_1
base's quantized matmuls in llama.cpp and over its float32 dequantization in torch, so a near tie can flip).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from rich.console import Console
from rich.table import Table

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.policies.hf_policy import HFPolicy
from agentcvr.policies.trained_gguf import TrainedGGUFPolicy
from agentcvr.tasks import TASK_ORDER
from agentcvr.trace import EpisodeResult
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator


def calls(result: EpisodeResult) -> list[tuple]:
    return [(step.tool, sorted(step.arguments.items())) for step in result.steps if step.kind == "tool"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, required=True, help="a LoRA warm start (merged weights, torch)")
    parser.add_argument("--master", type=Path, required=True, help="the same warm start packed (adapter.gguf)")
    parser.add_argument("--n", type=int, default=2, help="episodes per task kind")
    parser.add_argument("--seed", type=int, default=12, help="gen-scripts seed of the episodes")
    parser.add_argument("--task", action="append", help="task kinds (repeatable); default all ten")
    parser.add_argument("--max-turns", type=int, default=4)
    args = parser.parse_args()
    console = Console()
    engines = {
        "HF generate (torch)": HFPolicy(args.checkpoint),
        "llama.cpp + LoRA GGUF": TrainedGGUFPolicy(args.master, threads=1, weights="lora"),
    }
    scripts = [generate_one(task, i, args.seed) for task in args.task or TASK_ORDER for i in range(args.n)]
    simulator = ScriptSimulator({s.id: s for s in scripts})
    seconds = {name: 0.0 for name in engines}
    tokens = {name: 0 for name in engines}
    results: dict[str, list[EpisodeResult]] = {name: [] for name in engines}
    for script in scripts:
        for name, policy in engines.items():
            started = time.perf_counter()
            result = Agent(policy, simulator, Limits(max_turns=args.max_turns)).run(script.episode)
            seconds[name] += time.perf_counter() - started
            tokens[name] += sum(step.completion_tokens for step in result.steps)
            results[name].append(result)
        console.print(f"{script.task} {script.id}: " + " | ".join(f"{r[-1].answer}" for r in results.values()))
    torch_name, llama_name = engines
    pairs = list(zip(results[torch_name], results[llama_name], strict=True))
    same_calls = sum(calls(a) == calls(b) for a, b in pairs) / len(pairs)
    same_answer = sum(a.answer == b.answer for a, b in pairs) / len(pairs)
    table = Table(title=f"{len(scripts)} episodes (seed {args.seed}), one thread each")
    for column in ("engine", "s/episode", "ms/generated token", "generated tokens"):
        table.add_column(column)
    for name in engines:
        table.add_row(
            name,
            f"{seconds[name] / len(scripts):.2f}",
            f"{1000 * seconds[name] / max(1, tokens[name]):.1f}",
            str(tokens[name]),
        )
    console.print(table)
    console.print(
        f"llama.cpp is {seconds[torch_name] / seconds[llama_name]:.1f}x faster per episode; same calls in "
        f"{same_calls:.0%} of episodes, same answer in {same_answer:.0%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
