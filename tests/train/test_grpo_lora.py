"""GRPO on a LoRA warm start continues its adapter (what ships) rather than the merged weights: a real TRL step over
the memorized tiny policy, used as the pretrained base, with an adapter made as `train-sim -o model.lora_rank=R`
makes it."""

from __future__ import annotations

import shutil

import torch
from safetensors.torch import load_file

from agentcvr.masters import ADAPTER_FOLDER
from train.config import TrainConfig
from train.pipeline import REFERENCE_ADAPTER, Run
from train.tiny_model import load_policy_model, with_lora

from .test_grpo_smoke import Jitter


def test_grpo_trains_the_warm_starts_adapter_and_saves_it_apart(warm_start, tmp_path):
    from datasets import Dataset
    from peft import PeftModel

    from train.grpo import build_trainer
    from train.tokenizer import load_tokenizer
    from train.trajectories import episodes_by_id, prompt_rows

    base, scripts, limits = warm_start
    cfg = TrainConfig.model_validate(
        {
            "model": {"kind": "pretrained", "name_or_path": str(base), "lora_rank": 4, "lora_top_layers": 1},
            "agent": {"max_turns": limits.max_turns, "max_observation_chars": limits.max_observation_chars},
            "grpo": {
                "num_generations": 4,
                "prompts_per_step": 1,
                "max_steps": 1,
                "max_completion_length": 256,
                "temperature": 0.7,
                "learning_rate": 1e-2,  # one step that visibly moves a rank-4 adapter
                "beta": 0.01,  # KL on: TRL keeps a frozen copy of the adapter as the reference
                "save_steps": 100,
                "report_to": [],
            },
        }
    )
    warm = tmp_path / "warmstart"  # the warm start: its tokenizer and its adapter over the base
    shutil.copytree(base, warm)
    adapted = with_lora(load_policy_model(cfg.model, str(base)), cfg.model)
    adapted.save_pretrained(warm / ADAPTER_FOLDER)
    run = Run(cfg, tmp_path / "run")

    policy = run.grpo_policy(str(warm))
    assert isinstance(policy, PeftModel)
    start = {n: p.detach().clone() for n, p in policy.named_parameters() if p.requires_grad}
    assert start and all("lora_" in name for name in start)  # only the adapter trains; the base stays frozen
    table = {s.id: s for s in scripts}
    tokenizer = load_tokenizer(str(warm))
    trainer = build_trainer(
        cfg,
        policy,
        tokenizer,
        Dataset.from_list(prompt_rows(scripts, limits)),
        episodes_by_id(table),
        run_perception(table),
        tmp_path / "out",
        tmp_path / "tb",
        extra_rewards=[Jitter()],
    )
    assert REFERENCE_ADAPTER in trainer.model.peft_config  # the KL reference is the warm start, not the bare base
    trainer.train()
    moved = [n for n, p in trainer.model.named_parameters() if n in start and not torch.equal(p.detach(), start[n])]
    assert moved  # GRPO moved the adapter

    final = tmp_path / "final"  # saving merges the adapter into the base: checked last
    run.save_policy(trainer.model, tokenizer, final)
    saved = load_file(final / ADAPTER_FOLDER / "adapter_model.safetensors")
    assert saved and all("lora_" in key for key in saved)
    assert not (final / ADAPTER_FOLDER / REFERENCE_ADAPTER).exists()  # the reference copy is not shipped
    merged = load_file(final / "model.safetensors")
    assert not any("lora" in key for key in merged)  # beside it, the merged weights that torch evaluation loads


def run_perception(table):
    from simulator.script_sim import ScriptSimulator

    return ScriptSimulator(table)
