"""`train-sim --resume` with a larger `grpo.max_steps` goes on from the last checkpoint instead of reusing the
finished `final/`, and keeps the earlier result apart: real TRL steps of the memorized tiny policy through
`Run.grpo`, the stage `train-sim` runs."""

from __future__ import annotations

import json

import pytest

from train.config import TrainConfig
from train.pipeline import Run


def grpo_run(warm_start, out, max_steps: int) -> Run:
    """The run folder `out` resumed with GRPO's step budget at `max_steps` (a checkpoint every step)."""
    _, scripts, limits = warm_start
    cfg = TrainConfig.model_validate(
        {
            "agent": {"max_turns": limits.max_turns, "max_observation_chars": limits.max_observation_chars},
            "grpo": {
                "num_generations": 2,  # the smallest group
                "prompts_per_step": 1,
                "max_steps": max_steps,
                "max_completion_length": 256,
                "temperature": 0.7,
                "save_steps": 1,
                "report_to": [],
            },
        }
    )
    run = Run(cfg, out, resume=True)
    run.grpo_scripts = scripts  # what `prepare` makes from the config; here the memorized policy's own
    return run


def test_a_raised_step_budget_goes_on_from_the_last_checkpoint_and_keeps_the_earlier_result(warm_start, tmp_path):
    folder = str(warm_start[0])
    out = tmp_path / "run"
    out.mkdir()
    assert grpo_run(warm_start, out, 1).grpo(folder) == str(out / "final")
    assert (out / "final" / "DONE").read_text() == "1"
    (out / "eval_final.json").write_text("{}")  # the held-out report of that step-1 policy

    assert grpo_run(warm_start, out, 2).grpo(folder) == str(out / "final")

    assert (out / "final" / "DONE").read_text() == "2"
    kept = out / "final-1"
    assert (kept / "DONE").read_text() == "1" and (kept / "model.safetensors").exists()
    assert (kept / "eval_final.json").exists() and not (out / "eval_final.json").exists()  # re-evaluated, not reused
    state = json.loads((out / "grpo" / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]  # one row a step: nothing trained twice

    stamp = (out / "final" / "model.safetensors").stat().st_mtime_ns
    assert grpo_run(warm_start, out, 2).grpo(folder) == str(out / "final")  # the budget reached: reused as is
    assert (out / "final" / "model.safetensors").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in out.glob("final*")) == ["final", "final-1"]


def test_a_final_folder_without_its_step_is_refused_naming_the_file(warm_start, tmp_path):
    out = tmp_path / "run"
    (out / "final").mkdir(parents=True)
    (out / "final" / "DONE").write_text("ok")  # what the warm start's marker holds, not a step
    with pytest.raises(ValueError, match=r"final/DONE holds 'ok', not the step GRPO stopped at"):
        grpo_run(warm_start, out, 2).grpo(str(warm_start[0]))
    assert (out / "final" / "DONE").read_text() == "ok"  # nothing moved
