"""Whether GRPO has anything to learn from: rollout groups sampled as GRPO samples them, scored, not trained on.

GRPO's advantage is a reward's deviation from its group's mean, so a group whose G rollouts all earn one reward
teaches nothing (TRL logs the share of such groups as `frac_reward_zero_std`). `sample_groups` measures that per
set of prompts before a run is spent on them (`benchmarks/grpo_signal.py` runs it per task kind and temperature).
"""

from __future__ import annotations

import statistics
import time

import torch

from train.rewards import score


def sample_groups(trainer, rows: list[dict], seed: int = 0) -> dict:
    """G rollouts of each row (`trainer.args.num_generations`, at `trainer.args.temperature`) as one generation
    batch; per group, whether the trained reward, the official score and the dense score differ among its rollouts."""
    g = trainer.args.num_generations
    inputs = [dict(row) for row in rows for _ in range(g)]
    trainer.batch_rows = inputs
    torch.manual_seed(seed)
    started = time.perf_counter()
    out = trainer.rollout_func([row["prompt"] for row in inputs], trainer)
    seconds = time.perf_counter() - started
    columns = {"completions": out["completion_ids"], "trace": out["trace"], "episode": out["episode"]}
    weights = [float(w) for w in trainer.reward_weights]
    per_func = [func(**columns) for func in trainer.reward_funcs]
    total = [sum(w * values[i] for w, values in zip(weights, per_func, strict=True)) for i in range(len(inputs))]
    pairs = list(zip(out["trace"], out["episode"], strict=True))
    official = [score(result, episode) for result, episode in pairs]
    dense = [score(result, episode, dense=True) for result, episode in pairs]
    groups = [range(k * g, (k + 1) * g) for k in range(len(rows))]
    calls = [float(sum(step.kind == "tool" for step in result.steps)) for result in out["trace"]]

    def spread(values: list[float]) -> float:
        return sum(len({round(values[i], 6) for i in group}) > 1 for group in groups) / len(groups)

    return {
        "groups": len(groups),
        "spread": spread(total),
        "spread_official": spread(official),
        "spread_dense": spread(dense),
        "answers_per_group": statistics.mean(len({str(out["trace"][i].answer) for i in group}) for group in groups),
        "calls": statistics.mean(calls),
        "turns": statistics.mean(result.turns for result in out["trace"]),  # a turn whose calls all failed adds none
        # > 0: within a group, the rollouts that look more earn more; < 0: GRPO is paid to look less
        "calls_reward_correlation": within_group_correlation(calls, total, groups),
        "reward": statistics.mean(total),
        "correct": statistics.mean(official),
        "seconds": seconds,
    }


def within_group_correlation(xs: list[float], ys: list[float], groups: list[range]) -> float | None:
    """The mean over groups of the Pearson correlation of `xs` and `ys` among a group's rollouts; groups where either
    does not vary are left out (None when none is left): what a group-relative advantage rewards `xs` for."""
    values = []
    for group in groups:
        x, y = [xs[i] for i in group], [ys[i] for i in group]
        if len(set(x)) > 1 and len(set(y)) > 1:
            values.append(statistics.correlation(x, y))
    return statistics.mean(values) if values else None
