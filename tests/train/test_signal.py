"""`train.signal.sample_groups` on the tiny memorized policy: greedy rollouts of one episode never disagree, and a
reward that differs within every group is seen as a signal in every group."""

from __future__ import annotations

from tests.train.conftest import Jitter, trainer_over
from train.signal import sample_groups


def test_greedy_groups_carry_no_signal_and_a_jittered_reward_always_does(warm_start, tmp_path):
    grpo = {"num_generations": 3, "prompts_per_step": 2, "max_completion_length": 256, "temperature": 0.0}
    trainer, rows, _, _ = trainer_over(warm_start, tmp_path, grpo=grpo)
    greedy = sample_groups(trainer, rows)
    assert greedy["groups"] == len(rows) == 2
    assert greedy["spread"] == greedy["spread_official"] == greedy["spread_dense"] == 0.0
    assert greedy["answers_per_group"] == 1.0

    jittered, _, _, _ = trainer_over(warm_start, tmp_path / "j", grpo=grpo, extra_rewards=[Jitter()])
    figures = sample_groups(jittered, rows)
    assert figures["spread"] == 1.0 and figures["spread_official"] == 0.0  # only the trained reward moved
    assert 0.0 <= figures["correct"] <= 1.0 and figures["seconds"] > 0
