r"""GRPO's rollout sampling on the CPU: turns as one left-padded batch against each episode alone with its KV cache.

The batched sampler (`train.rollout.sample_batch`) prefills every live episode's whole conversation again at each
turn, padded to the longest row; the cached one (`grpo.turn_cache=true`, `train.rollout.TurnCache`) keeps each
episode's cache from one turn to the next and prefills only the tool output appended since, but decodes one episode
at a time. Both arms run the same prompts through the real trainer's `rollout_func` (the agent loop, the simulator,
the reader answering), from the same seed, one after the other, with nothing else running:

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/turn_cache.py --warm-start runs/smol-v11/warmstart \
        --scripts runs/seed48-search.jsonl --task MSR --task MOC --prompts 2 --group 8

Prints seconds, token positions the model ran on (padding included), sampled tokens and turns per arm, the ratio of
each to the batched arm's, and, at temperature 0, how many rollouts came out token for token the same.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch
import yaml
from rich.console import Console
from rich.table import Table

from agentcvr.script import Script


class PositionsFed:
    """Counts the token positions the model runs on (padding included: it costs the same compute)."""

    def __init__(self, model):
        self.count = 0
        self.handle = model.register_forward_pre_hook(self, with_kwargs=True)

    def __call__(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.count += ids.numel()


def round_robin(scripts: list[Script], n: int) -> list[Script]:
    """The first n scripts taking the kinds in turn (MSR, MOC, MSR, ...)."""
    by_kind: dict[str, list[Script]] = {}
    for script in scripts:
        by_kind.setdefault(script.task, []).append(script)
    chosen, queues = [], list(by_kind.values())
    while len(chosen) < n and any(queues):
        for queue in queues:
            if queue and len(chosen) < n:
                chosen.append(queue.pop(0))
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm-start", type=Path, required=True, help="a train-sim warm-start (or merged) folder")
    parser.add_argument("--scripts", type=Path, required=True, help="gen-scripts JSONL the warm start never saw")
    parser.add_argument("--task", action="append", help="kinds (repeatable); default every kind in the scripts")
    parser.add_argument("--prompts", type=int, default=2, help="episodes of the batch (GRPO's prompts_per_step)")
    parser.add_argument("--group", type=int, default=8, help="rollouts an episode gets (GRPO's num_generations)")
    parser.add_argument("--temperature", type=float, default=1.0, help="0: greedy, and the arms must agree")
    parser.add_argument("--budget", type=int, default=6656, help="grpo.max_completion_length")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the figures as JSON here too")
    args = parser.parse_args()
    for name in ("train_config.yaml", "config.json"):
        if not (args.warm_start / name).is_file():
            parser.error(f"--warm-start {args.warm_start} holds no {name}: not a merged train-sim policy folder")
    if args.prompts < 1 or args.group < 1:
        parser.error("--prompts and --group must be at least 1")

    from datasets import Dataset

    from agentcvr.interfaces import Limits
    from simulator.script_sim import ScriptSimulator
    from train.config import TrainConfig
    from train.grpo import build_trainer
    from train.tiny_model import load_policy_model
    from train.tokenizer import load_tokenizer
    from train.trajectories import episodes_by_id, prompt_rows

    scripts = [Script.model_validate_json(line) for line in args.scripts.read_text().splitlines() if line.strip()]
    scripts = round_robin([s for s in scripts if args.task is None or s.task in args.task], args.prompts)
    if len(scripts) < args.prompts:
        parser.error(f"{args.scripts} holds {len(scripts)} scripts of {args.task}, fewer than --prompts")
    recorded = yaml.safe_load((args.warm_start / "train_config.yaml").read_text())
    console = Console()
    table = {s.id: s for s in scripts}
    model = load_policy_model(TrainConfig.model_validate(recorded).model, str(args.warm_start))
    tokenizer = load_tokenizer(str(args.warm_start))
    figures = {}
    for arm in ("batched", "cached"):
        grpo = {
            **recorded.get("grpo", {}),
            "num_generations": args.group,
            "prompts_per_step": args.prompts,
            "gradient_accumulation_steps": 1,
            "max_completion_length": args.budget,
            "temperature": args.temperature if args.temperature > 0 else 1.0,
            "turn_cache": arm == "cached",
            "use_vllm": False,
            "beta": 0.0,  # no reference model: sampling only
            "report_to": [],
        }
        cfg = TrainConfig.model_validate({**recorded, "grpo": grpo})
        limits = Limits(max_turns=cfg.agent.max_turns, max_observation_chars=cfg.agent.max_observation_chars)
        rows = prompt_rows(scripts, limits, cfg.agent.protocol)
        folder = Path(tempfile.mkdtemp(prefix="turn-cache-"))  # the trainer's output folder: nothing is saved
        trainer = build_trainer(
            cfg,
            model,
            tokenizer,
            Dataset.from_list(rows),
            episodes_by_id(table),
            ScriptSimulator(table, sampling="frames"),
            folder,
            folder,
        )
        trainer.args.temperature = args.temperature  # 0 is greedy (GRPOConfig itself wants a positive one)
        inputs = [dict(row) for row in rows for _ in range(args.group)]
        trainer.batch_rows = inputs
        fed = PositionsFed(model)
        torch.manual_seed(args.seed)
        console.print(f"{arm}: {len(inputs)} rollouts of {[s.id for s in scripts]} ...")
        started = time.perf_counter()
        out = trainer.rollout_func([row["prompt"] for row in inputs], trainer)
        seconds = time.perf_counter() - started
        fed.handle.remove()
        figures[arm] = {
            "seconds": seconds,
            "positions": fed.count,
            "sampled": sum(sum(mask) for mask in out["env_mask"]),
            "completion": sum(len(ids) for ids in out["completion_ids"]),
            "turns": sum(result.turns for result in out["trace"]),
            "answered": sum(result.answer is not None for result in out["trace"]),
            "completions": out["completion_ids"],
        }
        console.print(f"{arm}: {seconds:.0f} s")

    base = figures["batched"]
    view = Table(title=f"{len(inputs)} rollouts, temperature {args.temperature}, {torch.get_num_threads()} threads")
    for column in ("sampler", "seconds", "positions run", "sampled tokens", "completion tokens", "turns", "answered"):
        view.add_column(column, justify="right")
    for arm, f in figures.items():
        ratio = "" if arm == "batched" else f" ({f['seconds'] / base['seconds']:.2f}x)"
        share = "" if arm == "batched" else f" ({f['positions'] / base['positions']:.2f}x)"
        view.add_row(
            arm,
            f"{f['seconds']:.0f}{ratio}",
            f"{f['positions']:,}{share}",
            str(f["sampled"]),
            str(f["completion"]),
            str(f["turns"]),
            f"{f['answered']}/{len(inputs)}",
        )
    console.print(view)
    same = sum(a == b for a, b in zip(base["completions"], figures["cached"]["completions"], strict=True))
    console.print(
        f"rollouts token for token the same in both arms: {same}/{len(inputs)}"
        + ("" if args.temperature == 0 else " (sampled: the arms draw their randomness in another order)")
    )
    console.print(f"speed-up of the cached sampler: {base['seconds'] / figures['cached']['seconds']:.2f}x")
    if args.out:
        kept = {arm: {k: v for k, v in f.items() if k != "completions"} for arm, f in figures.items()}
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, **kept}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
