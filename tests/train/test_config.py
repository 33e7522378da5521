"""Presets merge with key=value overrides; typos fail loudly."""

from __future__ import annotations

import pytest

from train.config import PRESETS, load_config


def test_every_preset_loads():
    for path in PRESETS.glob("*.yaml"):
        assert load_config(str(path)).name == path.stem


def test_overrides_are_yaml_values():
    cfg = load_config("cpu-tiny", ["grpo.max_steps=3", "data.tasks=[PI,NC]", "grpo.learning_rate=1e-5"])
    assert cfg.grpo.max_steps == 3 and cfg.data.tasks == ["PI", "NC"] and cfg.grpo.learning_rate == 1e-5


def test_unknown_key_and_preset_fail_with_the_valid_ones():
    with pytest.raises(ValueError, match="max_stepz"):
        load_config("cpu-tiny", ["grpo.max_stepz=3"])
    with pytest.raises(ValueError, match="cpu-tiny"):
        load_config("no-such-preset")


def test_the_model_settings_reach_the_trainer_that_loads_the_policy(tmp_path):
    """TRL loads a policy given as a path, and its KL reference, with `model_init_kwargs`: a GPU preset's bfloat16
    weights and flash attention must reach it (without them TRL loads float32 with its default attention)."""
    from train.grpo import grpo_args

    on_cpu = ["grpo.use_cpu=true", "grpo.bf16=false", "grpo.use_vllm=false", "grpo.deepspeed=null"]
    args = grpo_args(load_config("gpu-qwen3-8b", on_cpu), tmp_path, tmp_path)
    assert args.model_init_kwargs == {"dtype": "bfloat16", "attn_implementation": "flash_attention_2"}
    assert grpo_args(load_config("cpu-tiny"), tmp_path, tmp_path).model_init_kwargs == {"dtype": "float32"}


def test_a_lora_on_a_tiny_model_is_refused_rather_than_ignored():
    import pytest

    from train.config import load_config

    with pytest.raises(ValueError, match="lora_rank > 0 needs model.kind=pretrained"):
        load_config("cpu-learn", ["model.lora_rank=4"])
    cfg = load_config(
        "cpu-learn", ["model.lora_rank=4", "model.kind=pretrained", "model.name_or_path=gguf:smollm2-135m"]
    )
    assert cfg.model.lora_rank == 4 and cfg.model.lora_top_layers is None


def test_train_counts_give_a_kind_more_warm_start_scripts_and_grpo_takes_the_next_indices():
    from train.pipeline import make_scripts

    cfg = load_config(
        "cpu-tiny",
        [
            "data.tasks=[PI,PSS]",
            "data.train_per_task=2",
            "data.train_counts={PSS: 5}",
            "data.grpo_per_task=1",
            "data.heldout_per_task=1",
        ],
    )
    sft, grpo, heldout = make_scripts(cfg)
    assert [s.id for s in sft] == ["PI-000000", "PI-000001"] + [f"PSS-00000{i}" for i in range(5)]
    assert [s.id for s in grpo] == ["PI-000002", "PSS-000005"]
    with pytest.raises(ValueError, match=r"\['MOC'\], not in data.tasks"):
        load_config("cpu-tiny", ["data.tasks=[PI]", "data.train_counts={MOC: 3}"])
    with pytest.raises(ValueError, match=">= 0"):
        load_config("cpu-tiny", ["data.tasks=[PI]", "data.train_counts={PI: -1}"])


def test_zero_grpo_steps_make_the_warm_start_the_result(tmp_path):
    from train.pipeline import Run

    cfg = load_config("cpu-tiny", ["grpo.max_steps=0"])
    (tmp_path / "run").mkdir()
    run = Run(cfg, tmp_path / "run")
    assert run.grpo("runs/x/warmstart") == "runs/x/warmstart"  # nothing built, nothing trained
    assert not (tmp_path / "run" / "final").exists()
    with pytest.raises(ValueError, match="greater than or equal to -1"):
        load_config("cpu-tiny", ["grpo.max_steps=-2"])
