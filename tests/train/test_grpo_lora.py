"""GRPO on a LoRA warm start continues its adapter (what ships) rather than the merged weights: a real TRL step over
the memorized tiny policy, used as the pretrained base, with an adapter made as `train-sim -o model.lora_rank=R`
makes it."""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors.torch import load_file

from agentcvr.masters import ADAPTER_FOLDER
from tests.train.conftest import Jitter, lora_config, lora_warm_start
from train.config import TrainConfig
from train.pipeline import REFERENCE_ADAPTER, Run
from train.tiny_model import load_policy_model, with_lora


def test_grpo_trains_the_warm_starts_adapter_and_saves_it_apart(warm_start, tmp_path):
    from datasets import Dataset
    from peft import PeftModel

    from train.grpo import build_trainer
    from train.tokenizer import load_tokenizer
    from train.trajectories import episodes_by_id, prompt_rows

    _, scripts, limits = warm_start
    grpo = {
        "temperature": 0.7,
        "beta": 0.01,  # KL on: TRL keeps a frozen copy of the adapter as the reference
        "save_steps": 100,
    }
    cfg = lora_config(warm_start, grpo)
    warm = lora_warm_start(cfg, tmp_path / "warmstart")  # the warm start: its tokenizer and its adapter over the base
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


def test_a_warm_start_brought_as_its_adapter_alone_gets_its_merged_weights_back(warm_start, tmp_path):
    """A LoRA warm start travels without its merged weights (9 MB, not 540 MB, for SmolLM2-135M): resuming the run
    rebuilds them from the base and the adapter, the same weights a merge in place gives."""
    from peft import PeftModel

    base, _, _ = warm_start
    cfg = TrainConfig.model_validate(
        {"model": {"kind": "pretrained", "name_or_path": str(base), "lora_rank": 4, "lora_top_layers": 1}}
    )
    adapted = with_lora(load_policy_model(cfg.model, str(base)), cfg.model)
    torch.manual_seed(0)
    for name, parameter in adapted.named_parameters():
        if "lora_B" in name:  # a trained adapter: B is no longer zero
            parameter.data.normal_(0, 0.05)
    out = tmp_path / "run"
    warm = out / "warmstart"
    for name in ("tokenizer.json", "tokenizer_config.json", "policy.json"):
        if (base / name).exists():
            (warm / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(base / name, warm / name)
    adapted.save_pretrained(warm / ADAPTER_FOLDER)
    (warm / "DONE").write_text("ok")
    assert not list(warm.glob("*.safetensors"))

    assert Run(cfg, out, resume=True).warm_start() == str(warm)

    rebuilt = load_file(warm / "model.safetensors")
    expected = PeftModel.from_pretrained(load_policy_model(cfg.model, str(base)), str(warm / ADAPTER_FOLDER))
    expected = expected.merge_and_unload().state_dict()
    assert set(rebuilt) <= set(expected)
    assert all(torch.allclose(rebuilt[key], expected[key]) for key in rebuilt)
    bare = load_policy_model(cfg.model, str(base)).state_dict()
    changed = [key for key in rebuilt if not torch.equal(rebuilt[key], bare[key])]
    assert changed  # the adapter's update is in the rebuilt weights, not the bare base
    assert load_policy_model(cfg.model, str(warm)) is not None  # evaluation and GRPO load the folder as saved


def test_a_warm_start_with_neither_weights_nor_adapter_is_refused(warm_start, tmp_path):
    base, _, _ = warm_start
    cfg = TrainConfig.model_validate({"model": {"kind": "pretrained", "name_or_path": str(base), "lora_rank": 4}})
    warm = tmp_path / "run" / "warmstart"
    warm.mkdir(parents=True)
    (warm / "DONE").write_text("ok")
    with pytest.raises(FileNotFoundError, match="neither merged weights nor adapter/"):
        Run(cfg, tmp_path / "run", resume=True).warm_start()
