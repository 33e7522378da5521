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


def test_gradient_accumulation_splits_a_steps_rollouts_rather_than_adding_more(tmp_path):
    """On the H200 one gpu-looker run held 64.6 GB for its 32 rollouts in one backward batch, so two seeds did not fit
    side by side; micro-batches cut that memory while a step still generates, and learns from, the same 32."""
    from train.grpo import grpo_args

    cfg = load_config("gpu-looker", ["grpo.use_cpu=true", "grpo.gradient_accumulation_steps=4"])
    args = grpo_args(cfg, tmp_path, tmp_path)
    assert cfg.grpo.rollouts_per_step == 32
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (8, 4)
    assert args.generation_batch_size == 32  # one generation of all 32 a step, then four backward passes
    with pytest.raises(ValueError, match="gradient_accumulation_steps=3 must divide the 32 rollouts"):
        load_config("gpu-looker", ["grpo.gradient_accumulation_steps=3"])


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


def test_grpo_counts_choose_the_kinds_grpo_samples_after_the_same_warm_start():
    from train.pipeline import make_scripts

    base = ["data.tasks=[PI,PSS]", "data.train_per_task=2", "data.grpo_per_task=1", "data.heldout_per_task=1"]
    sft, grpo, _ = make_scripts(load_config("cpu-tiny", [*base, "data.grpo_counts={PI: 0, PSS: 3}"]))
    assert [s.id for s in sft] == ["PI-000000", "PI-000001", "PSS-000000", "PSS-000001"]  # the warm start unchanged
    assert [s.id for s in grpo] == ["PSS-000002", "PSS-000003", "PSS-000004"]
    with pytest.raises(ValueError, match=r"data.grpo_counts names \['MOC'\]"):
        load_config("cpu-tiny", [*base, "data.grpo_counts={MOC: 3}"])


def test_zero_grpo_steps_make_the_warm_start_the_result(tmp_path):
    from train.pipeline import Run

    cfg = load_config("cpu-tiny", ["grpo.max_steps=0"])
    (tmp_path / "run").mkdir()
    run = Run(cfg, tmp_path / "run")
    assert run.grpo("runs/x/warmstart") == "runs/x/warmstart"  # nothing built, nothing trained
    assert not (tmp_path / "run" / "final").exists()
    with pytest.raises(ValueError, match="greater than or equal to -1"):
        load_config("cpu-tiny", ["grpo.max_steps=-2"])


def test_the_warm_starts_scan_teacher_asks_for_its_frames_and_the_simulator_shows_what_they_land_on(tmp_path):
    """`sft.teacher_frames` reaches every scan look the warm start imitates; `simulator.sampling=frames` reaches the
    simulator those looks go to."""
    from agentcvr.agent import Agent
    from agentcvr.components import make_training_perception
    from train.pipeline import Run, make_scripts
    from train.trajectories import scripts_by_id

    cfg = load_config("cpu-learn", ["simulator.sampling=frames", "sft.teacher_frames=128", "data.tasks=[CC]"])
    run = Run(cfg, tmp_path)
    script = make_scripts(cfg)[0][0]
    table = scripts_by_id([script])
    perception = make_training_perception(cfg, table)
    assert perception.sampling == "frames"
    result = Agent(run.teacher(table), perception, run.limits).run(script.episode)
    looks = [step for step in result.steps if step.kind == "tool"]
    assert looks and {step.arguments["num_frames"] for step in looks} == {128}
