"""`train-sim --resume` refuses a run folder recorded under other settings, naming them, before anything runs; budgets,
cadences and the evaluation may change."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agentcvr.cli import app
from agentcvr.spec import SpecMismatch
from train.config import load_config
from train.resume import changed, check_resumable

PRESETS = sorted(p.stem for p in (Path(__file__).parents[2] / "train" / "presets").glob("*.yaml"))


def recorded(folder: Path, preset: str, *overrides: str) -> Path:
    """A run folder whose config.yaml is what `train-sim --preset PRESET -o ...` writes."""
    folder.mkdir(parents=True, exist_ok=True)
    settings = {**load_config(preset, list(overrides)).model_dump(), "versions": {"torch": "0.0"}}
    (folder / "config.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    return folder


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_resumes_itself_through_its_written_yaml(tmp_path, preset):
    folder = recorded(tmp_path, preset)
    check_resumable(folder, load_config(preset, []).model_dump(mode="json"))  # the YAML round trip changes nothing


def test_a_changed_simulator_or_teacher_is_refused_naming_each_difference(tmp_path):
    folder = recorded(tmp_path, "cpu-tiny", "simulator.sampling=events", "sft.teacher_frames=16")
    with pytest.raises(SpecMismatch) as refused:
        check_resumable(folder, load_config("cpu-tiny", []).model_dump(mode="json"))
    message = str(refused.value)
    assert 'simulator.sampling: "frames" != "events"' in message
    assert "sft.teacher_frames: 128 != 16" in message
    same = load_config("cpu-tiny", ["simulator.sampling=events", "sft.teacher_frames=16"])
    check_resumable(folder, same.model_dump(mode="json"))


def test_budgets_cadences_and_evaluation_may_change_on_resume():
    before = load_config("cpu-tiny", []).model_dump(mode="json")
    after = load_config(
        "cpu-tiny",
        [
            "grpo.max_steps=500",
            "grpo.max_seconds=60",
            "sft.max_seconds=30",
            "eval.batch_size=7",
            "grpo.gradient_accumulation_steps=16",  # micro-batches of one rollout: a run killed for memory goes on
            "grpo.gradient_checkpointing=true",
        ],
    ).model_dump(mode="json")
    assert changed(before, after) == []
    assert changed(before, load_config("cpu-tiny", ["grpo.learning_rate=0.5"]).model_dump(mode="json")) == [
        f"grpo.learning_rate: 0.5 != {before['grpo']['learning_rate']}"
    ]


def test_a_setting_added_since_the_run_counts_as_its_default_there():
    before = load_config("cpu-tiny", []).model_dump(mode="json")
    del before["grpo"]["forced_search_share"]  # recorded before the setting existed
    assert changed(before, load_config("cpu-tiny", []).model_dump(mode="json")) == []
    forced = load_config("cpu-tiny", ["sft.teacher=search", "grpo.forced_search_share=0.5"]).model_dump(mode="json")
    assert "grpo.forced_search_share: 0.5 != 0.0" in changed(before, forced)


def test_the_command_refuses_before_training_and_leaves_the_folder_as_it_was(tmp_path):
    folder = recorded(tmp_path / "run", "cpu-tiny", "simulator.sampling=events")
    written = (folder / "config.yaml").read_text()
    args = ["train-sim", "--preset", "cpu-tiny", "--out", str(folder), "--resume"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 2, result.output
    assert 'simulator.sampling: "frames" != "events"' in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["config.yaml"]
    assert (folder / "config.yaml").read_text() == written
