"""`train.signal.sample_groups` on the tiny memorized policy: greedy rollouts of one episode never disagree, and a
reward that differs within every group is seen as a signal in every group."""

from __future__ import annotations

from tests.train.conftest import Jitter, trainer_over
from train.signal import sample_groups, within_group_correlation


def test_greedy_groups_carry_no_signal_and_a_jittered_reward_always_does(warm_start, tmp_path):
    grpo = {"num_generations": 3, "prompts_per_step": 2, "max_completion_length": 256, "temperature": 0.0}
    trainer, rows, _, _ = trainer_over(warm_start, tmp_path, grpo=grpo)
    greedy = sample_groups(trainer, rows)
    assert greedy["groups"] == len(rows) == 2
    assert greedy["spread"] == greedy["spread_official"] == greedy["spread_dense"] == 0.0
    assert greedy["answers_per_group"] == 1.0
    assert greedy["turns"] >= 1  # the answer's turn at least
    assert greedy["calls"] > 0 and greedy["calls_reward_correlation"] is None  # nothing varies within a group

    jittered, _, _, _ = trainer_over(warm_start, tmp_path / "j", grpo=grpo, extra_rewards=[Jitter()])
    figures = sample_groups(jittered, rows)
    assert figures["spread"] == 1.0 and figures["spread_official"] == 0.0  # only the trained reward moved
    assert 0.0 <= figures["correct"] <= 1.0 and figures["seconds"] > 0


def test_the_calls_reward_correlation_is_taken_within_groups_and_skips_groups_that_do_not_vary():
    groups = [range(0, 3), range(3, 6), range(6, 9)]
    calls = [1, 2, 3, 1, 2, 3, 2, 2, 2]  # the third group all made two calls
    reward = [0.0, 0.5, 1.0, 1.0, 0.5, 0.0, 0.0, 1.0, 0.5]
    assert within_group_correlation(calls, reward, groups) == 0.0  # +1 in the first, -1 in the second
    assert within_group_correlation(calls, reward, groups[:1]) == 1.0
    assert within_group_correlation(calls, reward, groups[2:]) is None
    shifted = [r + 10 * (i // 3) for i, r in enumerate(reward)]  # a group-wide offset changes no correlation
    assert within_group_correlation(calls, shifted, groups[:2]) == 0.0
