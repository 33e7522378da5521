"""Which embedded master should be the default: expert, random and each GGUF master on the same fresh episodes.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/master_choice.py --n 20                  # 20 per task kind, sim
    .venv/bin/python benchmarks/master_choice.py --n 2 --policy gguf --policy gguf-free:qwen2.5-coder-0.5b
    .venv/bin/python benchmarks/master_choice.py --n 2 --perception real --videos runs/demo/rendered

Every policy runs the same episodes (`gen-scripts` seed 11 by default, a seed no earlier table used) through the same
agent loop and perception; results go to `<work>/<perception>/<policy>.jsonl` and a rerun resumes where each stopped.
The table gives success (official), turns, tool calls, valid-action rate, seconds per episode and the number of episodes
that repeated one rejected output (the failure this master design must never show). Expert and random are the upper
and lower bounds measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from answer_scoring import decision  # benchmarks/, this script's own folder, leads sys.path
from rich.console import Console
from rich.table import Table

from agentcvr.agent import Agent
from agentcvr.components import make_perception, make_policy, perception_component, policy_component, recorded
from agentcvr.episode import Episode
from agentcvr.interfaces import Limits
from agentcvr.policies.read_answers import masters_answer
from agentcvr.spec import RunSpec
from agentcvr.tasks import TASK_ORDER
from eval.agent_mode import AgentPredictor, EpisodeItem, grade_episode, score_episode
from eval.record import Record, read_latest
from eval.runner import RunConfig, run_items
from scripts_gen.generate import generate

DEFAULT_POLICIES = [
    "expert",
    "random",
    "gguf:qwen2.5-coder-0.5b",
    "gguf-free:qwen2.5-coder-0.5b",
    "gguf:qwen2.5-coder-1.5b",
    "gguf-free:qwen2.5-coder-1.5b",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("runs/master_choice"))
    parser.add_argument("--n", type=int, default=20, help="episodes per task kind")
    parser.add_argument("--seed", type=int, default=11, help="gen-scripts seed (11: unseen by earlier tables)")
    parser.add_argument("--task", action="append", help="task kinds (repeatable); default all ten")
    parser.add_argument("--policy", action="append", help=f"policies (repeatable); default {DEFAULT_POLICIES}")
    parser.add_argument("--perception", default="sim", choices=["sim", "real"])
    parser.add_argument("--videos", type=Path, help="rendered episodes (from `agentcvr render`) for --perception real")
    parser.add_argument("--max-turns", type=int, default=10, help="policy turns before a forced answer")
    parser.add_argument(
        "--threads",
        type=int,
        help="llama.cpp threads of a GGUF or LoRA master (default: all cores, max 8)",
    )
    parser.add_argument("--answer-orders", type=int, help="option orders a GGUF master's answer is voted over")
    parser.add_argument(
        "--answer-scoring",
        choices=["letter", "cloze", "verify"],
        help="how a GGUF master picks a multiple-choice answer",
    )
    parser.add_argument(
        "--reader", type=Path, help="a trained reader folder: a policy written NAME+reader answers choice tasks with it"
    )
    parser.add_argument(
        "--reader-looks",
        choices=["master", "scan", "search"],
        default="master",
        help="with +reader: who looks on choice tasks (scan: the scan's looks, then the reader at once; search: the "
        "scan, then the search's second look, then the reader)",
    )
    parser.add_argument(
        "--scan-frames",
        type=int,
        help="frames each whole-video scan look asks for, where the scan looks (gguf's default; 16 when not given)",
    )
    parser.add_argument(
        "--sampling",
        choices=["events", "frames"],
        help="with --perception sim: what a look sees (frames: only what is on screen at its frames, as on real "
        "footage, the simulator's default; events: every event in the interval)",
    )
    parser.add_argument("--table-only", action="store_true", help="tabulate the episodes already run; run nothing")
    args = parser.parse_args()

    # Index-major order (episode 0 of every kind, then episode 1, ...): a run stopped early is balanced over kinds.
    generated = generate("all", args.n, args.seed)
    generated.sort(key=lambda s: (int(s.id.rsplit("-", 1)[1]), TASK_ORDER.index(s.task)))
    scripts = {s.id: s for s in generated if not args.task or s.task in args.task}
    episodes = [s.episode for s in scripts.values()]
    if args.perception == "real":
        if args.videos is None:
            parser.error("--perception real needs --videos (render the same seed with `agentcvr render`)")
        from agentcvr.perception.real import attach_videos

        episodes = attach_videos(episodes, args.videos)
    if args.sampling is not None and args.perception != "sim":
        parser.error("--sampling is the simulator's option: use it with --perception sim")
    sampling = {} if args.sampling is None else {"sampling": args.sampling}
    perception_part = perception_component(args.perception, **sampling)
    perception = None if args.table_only else make_perception(perception_part, scripts)
    console = Console(width=200)
    columns: dict[str, list[Record]] = {}
    for spec in args.policy or DEFAULT_POLICIES:
        name = spec
        if spec.endswith("+reader") and args.reader_looks != "master":
            name += f"_{args.reader_looks}"
        if spec.startswith("gguf") and args.answer_orders is not None:
            name += f"_orders{args.answer_orders}"
        if spec.startswith("gguf") and args.answer_scoring is not None:
            name += f"_{args.answer_scoring}"
        if args.scan_frames is not None:
            name += f"_frames{args.scan_frames}"
        if args.sampling is not None:
            name += f"_sees-{args.sampling}"
        out = args.work / args.perception / f"{name.replace(':', '_').replace('/', '_')}.jsonl"
        if args.table_only:
            done = read_latest(out)[0]
            columns[name] = [done[e.id] for e in episodes if e.id in done]
            continue
        options = {"threads": args.threads, "answer_orders": args.answer_orders, "answer_scoring": args.answer_scoring}
        base, _, extra = spec.partition("+")
        if extra not in ("", "reader") or (extra and args.reader is None):
            parser.error(f"policy {spec!r}: the only suffix is +reader, and it needs --reader DIR")
        reading = {"reader": str(args.reader), "reader_looks": args.reader_looks} if extra else {}
        if base.startswith("gguf"):
            given = options
        elif base.startswith("trained"):  # a LoRA master runs in llama.cpp too
            given = {"threads": args.threads}
        else:
            given = {}
        if args.scan_frames is not None:
            given = {**given, "scan_frames": args.scan_frames}
        policy_part = policy_component(base, **reading, **given)
        limits = Limits(max_turns=args.max_turns)
        run_spec = RunSpec(policy=recorded(policy_part), perception=recorded(perception_part), limits=limits)
        predictor = AgentPredictor(Agent(make_policy(policy_part, scripts), perception, limits))
        console.print(f"{name} -> {out}", markup=False)
        items = [EpisodeItem(e) for e in episodes]
        config = RunConfig(concurrency=1, resume=True)  # a rerun continues each policy's file
        try:
            run = run_items(items, predictor, out, config, spec=run_spec, grade=grade_episode, console=console)
            columns[name] = asyncio.run(run)
        finally:
            predictor.close()
    by_id = {e.id: e for e in episodes}
    for name, rows in list(columns.items()):
        if any(_own_letter(row) for row in rows):  # a voting or scoring master: the written letters are in the trace
            columns[f"{name} (own answers)"] = [_own_answer(row, by_id[row.key]) for row in rows]
    console.print(master_table(columns, f"masters on {args.perception}, seed {args.seed}, of {len(episodes)} episodes"))
    return 0


def _own_letter(row: Record) -> str | None:
    """The letter the answer turn wrote before a reader, a vote or answer scoring replaced it, from its last
    thought."""
    if row.result is None or row.status != "ok":  # failed: no reply
        return None
    thought = (row.result.steps[-1].thought if row.result.steps else None) or ""
    if (own := masters_answer(thought)) is not None:
        return own
    try:
        return decision(thought)["own"]
    except ValueError:  # an answer that nothing replaced
        return None


def _own_answer(row: Record, episode: Episode) -> Record:
    """The episode as it would have ended with the written letter: the turn's own answer, scored again."""
    own = _own_letter(row)
    if own is None or row.result is None:
        return row
    return score_episode(
        row.model_copy(update={"output": own, "result": row.result.model_copy(update={"answer": own})}), episode
    )


def master_table(columns: dict[str, list[Record]], title: str) -> Table:
    """One row per policy: overall figures, then success per task kind."""
    table = Table(title=title)
    for name in ["policy", "n", "success %", "turns", "calls", "valid %", "s/episode", "stuck"]:
        table.add_column(name, justify="left" if name == "policy" else "right")
    tasks = [t for t in TASK_ORDER if any(r.task == t for rows in columns.values() for r in rows)]
    for task in tasks:
        table.add_column(task, justify="right")
    for spec, rows in columns.items():
        n = len(rows) or 1
        traces = [r.result for r in rows if r.result is not None and r.status == "ok"]  # not failures' partial ones
        t = len(traces) or 1
        per_task = []
        for task in tasks:
            scores = [r.official for r in rows if r.task == task]
            per_task.append(f"{100 * sum(scores) / len(scores):.0f}" if scores else "")
        table.add_row(
            spec,
            str(len(rows)),
            f"{100 * sum(r.official for r in rows) / n:.1f}",
            f"{sum(r.turns for r in traces) / t:.1f}",
            f"{sum(r.tool_calls for r in traces) / t:.1f}",
            f"{100 * sum(r.valid_action_rate for r in traces) / t:.0f}",
            f"{sum(r.seconds for r in traces) / t:.1f}",
            str(sum(r.repeated_invalid > 0 for r in traces)),
            *per_task,
        )
    return table


if __name__ == "__main__":
    raise SystemExit(main())
