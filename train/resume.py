"""What a `train-sim --resume` may change: budgets, cadences, evaluation and the engines that run the same math.

A run folder's stages were computed under the config it recorded (`config.yaml`). Resuming it under another simulator,
teacher, model, reward or data would train the rest of the run on something else and report one run made of two, as a
changed default (session 24: `simulator.sampling` became `frames`) would do silently. So a resume compares the
settings and refuses, naming each difference, unless every one is in `RESUMABLE`: how long and how often (a budget
raised to go further), how the held-out evaluation runs, and the engines that compute the same updates (a run killed for
memory resumes in smaller micro-batches).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentcvr.spec import SpecMismatch, differences, flatten
from train.config import TrainConfig, recorded_settings

RESUMABLE = frozenset(
    {
        "sft.max_seconds",
        "sft.max_epochs",
        "sft.patience",
        "sft.checkpoint_minutes",
        "grpo.max_steps",
        "grpo.max_seconds",
        "grpo.num_train_epochs",
        "grpo.save_steps",
        "grpo.save_total_limit",
        "grpo.logging_steps",
        "grpo.report_to",
        "grpo.use_vllm",
        "grpo.vllm_mode",
        "grpo.vllm_server_base_url",
        "grpo.vllm_gpu_memory_utilization",
        "grpo.gradient_checkpointing",
        "grpo.prefix_cache",  # the same samples, each turn's context run once
        "grpo.gradient_accumulation_steps",  # micro-batches of one step's rollouts: less memory, the same update
        "grpo.use_cpu",
        "grpo.deepspeed",
    }
)
RESUMABLE_SECTIONS = ("eval.",)  # the held-out evaluation: how it runs, not what is trained
NOT_SETTINGS = ("versions.",)  # recorded beside the settings: the machine's packages


def resumable(key: str) -> bool:
    """Whether a resume may change the dotted setting `key`."""
    return key in RESUMABLE or key.startswith(RESUMABLE_SECTIONS) or key.startswith(NOT_SETTINGS)


def changed(recorded: Mapping[str, Any], resolved: Mapping[str, Any]) -> list[str]:
    """The settings a resume changes that the run's finished stages depend on, as "key: now != before". A setting
    added since the run was recorded counts as its default there (a new setting's default keeps the old behaviour)."""
    defaults = flatten(TrainConfig().model_dump(mode="json"))
    before = flatten(recorded)
    added = {key for key in flatten(resolved) if key not in before and key in defaults}
    return differences(resolved, {**before, **{key: defaults[key] for key in added}}, ignored=resumable)


def check_resumable(folder: Path, resolved: Mapping[str, Any]) -> None:
    """Refuse to resume `folder` under settings its `config.yaml` was not written with (but for `RESUMABLE`)."""
    recorded = recorded_settings(folder)
    if recorded is None:
        return  # nothing finished yet, or a warm start copied in by hand: nothing recorded to compare
    changes = changed(recorded, resolved)
    if changes:
        raise SpecMismatch(
            f"{folder} was trained under other settings; resuming would continue it under these: "
            f"{'; '.join(changes)} (this run's value first). Pass the same settings (e.g. -o KEY=VALUE with the "
            f"recorded value), or use another --out."
        )
