"""`agentcvr merge-checkpoint`: a LoRA run's GRPO checkpoint, as TRL writes it after a real step, becomes a policy
folder with the merged weights that evaluation and the plan benchmarks load."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
import yaml
from safetensors.torch import load_file
from typer.testing import CliRunner

from agentcvr.cli import app
from tests.train.conftest import Jitter, lora_config, lora_warm_start
from train.merge import merge_checkpoint
from train.monitoring import CompletionMarker
from train.pipeline import Run
from train.tiny_model import load_policy_model


@pytest.fixture(scope="module")
def grpo_run(warm_start, tmp_path_factory):
    """A run folder whose GRPO wrote `grpo/checkpoint-1` after one real TRL step on the warm start's adapter."""
    from datasets import Dataset

    from simulator.script_sim import ScriptSimulator
    from train.grpo import build_trainer
    from train.tokenizer import load_tokenizer
    from train.trajectories import episodes_by_id, prompt_rows

    _, scripts, limits = warm_start
    grpo = {
        "beta": 0.0,
        "save_steps": 1,
    }
    cfg = lora_config(warm_start, grpo)
    run_folder = tmp_path_factory.mktemp("grpo_run")
    (run_folder / "config.yaml").write_text(yaml.safe_dump({**cfg.model_dump(), "versions": {}}, sort_keys=False))
    warm = lora_warm_start(cfg, run_folder / "warmstart")
    table = {s.id: s for s in scripts}
    trainer = build_trainer(
        cfg,
        Run(cfg, run_folder).grpo_policy(str(warm)),
        load_tokenizer(str(warm)),
        Dataset.from_list(prompt_rows(scripts, limits)),
        episodes_by_id(table),
        ScriptSimulator(table),
        run_folder / "grpo",
        run_folder / "tb",
        callbacks=[CompletionMarker()],
        extra_rewards=[Jitter()],
    )
    trainer.train()
    return cfg, run_folder


def test_a_checkpoint_merges_into_the_weights_its_adapter_gives(grpo_run):
    from peft import PeftModel

    cfg, run_folder = grpo_run
    checkpoint = run_folder / "grpo" / "checkpoint-1"
    assert not (checkpoint / "config.json").exists()  # TRL keeps the adapter alone: nothing a benchmark can load

    folder = merge_checkpoint(checkpoint)

    assert folder == run_folder / "merged-1"
    assert {"config.json", "model.safetensors", "tokenizer.json", "policy.json", "DONE"} <= {
        p.name for p in folder.iterdir()
    }
    spec = json.loads((folder / "policy.json").read_text())
    assert spec["max_turn_tokens"] == cfg.agent.max_turn_tokens  # inference gives a turn the budget it was trained with
    merged = load_file(folder / "model.safetensors")
    base = load_policy_model(cfg.model, cfg.model.name_or_path)
    expected = PeftModel.from_pretrained(base, str(checkpoint)).merge_and_unload().state_dict()
    assert set(merged) <= set(expected) and all(torch.allclose(merged[k], expected[k]) for k in merged)
    bare = load_policy_model(cfg.model, cfg.model.name_or_path).state_dict()
    assert any(not torch.equal(merged[k], bare[k]) for k in merged)  # GRPO's step is in the merged weights
    assert load_policy_model(cfg.model, str(folder)) is not None


def test_the_command_refuses_what_it_cannot_merge(grpo_run, tmp_path):
    _, run_folder = grpo_run
    checkpoint = run_folder / "grpo" / "checkpoint-1"
    runner = CliRunner()

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("keep me")
    result = runner.invoke(app, ["merge-checkpoint", str(checkpoint), "--out", str(taken)])
    assert result.exit_code == 2 and "is not empty" in result.output
    assert (taken / "x").read_text() == "keep me"

    torn = run_folder / "grpo" / "checkpoint-2"
    shutil.copytree(checkpoint, torn)
    (torn / "COMPLETE").unlink()
    result = runner.invoke(app, ["merge-checkpoint", str(torn), "--out", str(tmp_path / "t")])
    assert result.exit_code == 2 and "COMPLETE" in result.output

    result = runner.invoke(app, ["merge-checkpoint", str(run_folder / "warmstart")])
    assert result.exit_code == 2 and "checkpoint-N" in result.output

    result = runner.invoke(app, ["merge-checkpoint", str(checkpoint), "--out", str(tmp_path / "ok")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ok" / "model.safetensors").is_file()


def test_a_merge_that_fails_leaves_no_folder_behind(grpo_run, tmp_path):
    _, run_folder = grpo_run
    damaged = run_folder / "grpo" / "checkpoint-3"
    shutil.copytree(run_folder / "grpo" / "checkpoint-1", damaged)
    (damaged / "adapter_model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(Exception):  # noqa: B017 (whatever safetensors raises on a damaged file)
        merge_checkpoint(damaged, tmp_path / "merged")
    assert not (tmp_path / "merged").exists()  # nothing that looks like a policy is left
