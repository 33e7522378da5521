"""Real GRPO steps of the tiny warm-started policy with the method trainers (TAS, CARE, both): the loss is finite,
the parameters move, TAS hands TRL (B, T) advantages that are zero on tool tokens, CARE keeps an EMA copy.

Shrunk values, each commented; the fixture is the smoke test's (2 PI episodes memorized by a 2-layer policy).
"""

from __future__ import annotations

import math

import torch

from tests.train.conftest import Jitter  # (warm_start: the session fixture there too)
from train.config import TrainConfig


def _train(
    warm_start,  # noqa: F811
    tmp_path,
    methods: dict,
    scripts=None,
    steps: int = 2,
    save_steps: int = 100,
    temperature: float = 0.7,  # close to the memorized behaviour, still sampling
):
    from datasets import Dataset

    from agentcvr.components import make_training_perception
    from train.grpo import build_trainer
    from train.tokenizer import load_tokenizer
    from train.trajectories import episodes_by_id, prompt_rows

    folder, warm_scripts, limits = warm_start
    scripts = scripts or warm_scripts
    cfg = TrainConfig.model_validate(
        {
            "agent": {"max_turns": limits.max_turns, "max_observation_chars": limits.max_observation_chars},
            "grpo": {
                "num_generations": 4,  # G=4 instead of 8
                "prompts_per_step": 1,  # one episode per step
                "max_steps": steps,  # two optimizer steps unless the test needs more
                "max_completion_length": 256,  # short multi-turn completions
                "temperature": temperature,
                "learning_rate": 1e-3,
                "save_steps": save_steps,  # no checkpoint unless the test asks
                "report_to": [],
            },
            "methods": methods,
        }
    )
    table = {s.id: s for s in scripts}
    trainer = build_trainer(
        cfg,
        str(folder),
        load_tokenizer(str(folder)),
        Dataset.from_list(prompt_rows(scripts, limits)),
        episodes_by_id(table),
        make_training_perception(cfg, table),  # what train-sim wires: orchestrated with the jigsaw method
        tmp_path / "out",
        tmp_path / "tb",
        extra_rewards=[Jitter()],  # a non-zero advantage in every group
    )
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train()
    logs = [row for row in trainer.state.log_history if "loss" in row]
    assert len(logs) == steps and all(math.isfinite(row["loss"]) for row in logs)
    assert any(not torch.equal(p.detach(), before[name]) for name, p in trainer.model.named_parameters())
    return trainer, logs


def test_tas_trainer_steps_with_token_advantages(warm_start, tmp_path):  # noqa: F811
    trainer, _ = _train(warm_start, tmp_path, {"tas": {"enabled": True}})
    batch = trainer.last_batch
    advantages, model_mask = batch["advantages"], batch["completion_mask"] * batch["tool_mask"]
    assert advantages.shape == batch["completion_ids"].shape  # (B, T)
    assert (advantages[model_mask == 0] == 0).all()  # tool output and padding carry no advantage
    row = int((advantages.abs().sum(dim=1) > 0).nonzero()[0])
    shaped = advantages[row][model_mask[row] == 1]
    assert torch.isclose(shaped[0] / shaped[len(shaped) // 2], torch.tensor(1.3), atol=0.02)  # ends vs middle


def test_care_trainer_steps_with_an_ema_reference(warm_start, tmp_path):  # noqa: F811
    # EMA each step; near-greedy sampling, so that the memorized (right) answers come out: at 0.7 a run can sample
    # none, and the bonus, which only right answers earn, is then never paid
    methods = {"care": {"enabled": True, "every": 1}}
    trainer, logs = _train(warm_start, tmp_path, methods, save_steps=2, temperature=0.1)
    assert trainer.beta == 0.0 and trainer.ref_model is None  # no KL term in CARE mode
    assert trainer.ema_model is not None and trainer._ema_step == 1  # updated at the second generation
    online = dict(trainer.model.named_parameters())
    assert any(not torch.equal(p, online[name].detach()) for name, p in trainer.ema_model.named_parameters())
    assert all("care/bonus_mean" in row for row in logs)
    saved = torch.load(tmp_path / "out" / "checkpoint-2" / "care_ema.pt", weights_only=False)  # resumable EMA
    assert saved["step"] == 1 and all(
        torch.equal(v, trainer.ema_model.state_dict()[k]) for k, v in saved["ema"].items()
    )
    # the memorized policy answers right, so its answer turns are scored by the EMA model and earn the bonus
    assert sum(row["care/bonus_mean"] for row in logs) > 0 and sum(row["care/consistent_share"] for row in logs) > 0


def test_methods_stack(warm_start, tmp_path):  # noqa: F811
    trainer, _ = _train(warm_start, tmp_path, {"tas": {"enabled": True}, "care": {"enabled": True}})
    assert type(trainer).__name__ == "TASCARETrainer"
    assert trainer.last_batch["advantages"].dim() == 2


def test_jigsaw_pretraining_steps_on_puzzles(warm_start, tmp_path):  # noqa: F811
    from train.methods.jigsaw import jigsaw_script

    puzzles = [jigsaw_script(s, n_clips=3, mode="CMM", seed=i) for i, s in enumerate(warm_start[1])]
    _, logs = _train(warm_start, tmp_path, {"jigsaw": {"enabled": True}}, scripts=puzzles)
    assert all(math.isfinite(row["rewards/jigsaw/mean"]) for row in logs)  # Eq. 6 replaced correctness
    assert "rewards/correctness/mean" not in logs[0]


def test_train_sim_method_option_names_the_valid_ones():
    from typer.testing import CliRunner

    from agentcvr.cli import app

    result = CliRunner().invoke(app, ["train-sim", "--method", "replay-all"])
    assert result.exit_code != 0 and "unknown method" in result.output and "jigsaw" in result.output


def test_replay_trainer_mixes_replayed_groups_and_hints(warm_start, tmp_path):  # noqa: F811
    methods = {
        "replay": {
            "enabled": True,
            "hints": "template",
            "hint_patience": 1,  # hint at the first Hard replay
            "hint_max_kl": 1e9,  # whatever the KL: the trigger logic itself is pinned in test_hints_self_reward
        }
    }
    trainer, logs = _train(warm_start, tmp_path, methods, steps=3, save_steps=3)
    assert [row["replay/groups"] for row in logs] == [0.0, 1.0, 1.0]  # empty buffer first, then 4:4 -> 1 group
    batch = trainer.last_batch
    assert len(batch["completion_ids"]) == 8  # 4 on-policy rows + 4 replayed rows
    assert batch["old_per_token_logps"].shape == batch["completion_ids"].shape  # behaviour log-probs for Eq. 4
    assert len(trainer.buffer) == 3 and trainer.hints  # three stored groups; a Hard prompt got its hint
    saved = torch.load(tmp_path / "out" / "checkpoint-3" / "replay.pt", weights_only=False)
    assert len([g for tier in saved["buffer"]["tiers"].values() for g in tier]) == 3 and saved["hints"] == trainer.hints
