"""Tool errors when episodes share one simulator from many threads, as GRPO's rollout runs them (one per episode).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/threaded_episodes.py              # 320 episodes on 32 threads
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/threaded_episodes.py --threads 1  # the single-thread baseline

The scan teacher plays `--n` episodes of each kind, repeated `--repeat` times, through the agent loop and the rule
simulator. A perception error is told to the model instead of an observation, so in training it is reward noise;
the count must be 0 on any number of threads, as it is on one. (With the shared stemmer of commit bab3e47, two runs
on 32 threads gave 115 and 102 errors in 1,132 calls: 10.2 and 9.0 %; the race's rate depends on timing.)
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.policies.scan_teacher import ScanTeacher
from scripts_gen.generate import generate
from simulator.script_sim import ScriptSimulator

KINDS = ["BU", "NC", "CC", "PEA", "PI", "FSA", "PSS", "MSR", "MOC", "CCQA"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=32, help="episodes played at once (GRPO: prompts x generations)")
    parser.add_argument("--n", type=int, default=8, help="episodes per task kind")
    parser.add_argument("--repeat", type=int, default=4, help="times each episode is played")
    parser.add_argument("--seed", type=int, default=3, help="gen-scripts seed")
    args = parser.parse_args()
    scripts = [script for kind in KINDS for script in generate(kind, args.n, seed=args.seed)]
    table = {script.id: script for script in scripts}
    agent = Agent(ScanTeacher(table), ScriptSimulator(table), Limits(max_turns=4))
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        results = list(pool.map(lambda script: agent.run(script.episode), scripts * args.repeat))
    calls = sum(result.tool_calls for result in results)
    errors = sum(result.tool_errors for result in results)
    hit = sum(result.tool_errors > 0 for result in results)
    print(
        f"{len(results)} episodes on {args.threads} threads: {calls} calls, {errors} tool errors "
        f"({100 * errors / max(calls, 1):.1f} %), {hit} episodes hit, {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__":
    main()
