"""AVATAR's replay buffer on hand-computed cases: VCRS window, quantile tiers, capacity, Eq. 11, Eq. 4, Eq. 3, state."""

from __future__ import annotations

import math

import torch

from train.methods.replay import (
    VCRS,
    ReplayGroup,
    StratifiedReplayBuffer,
    assign_tier,
    importance_ratio,
    off_policy_groups,
    tier_thresholds,
    vcrs_advantages,
    weight_off_policy,
)


def group(prompt: str, mean: float, step: int = 0) -> ReplayGroup:
    return ReplayGroup(prompt, torch.full((4,), mean), torch.zeros(4, 3), step=step)


def test_vcrs_is_the_mean_of_the_last_window_groups():
    vcrs = VCRS(window=2)
    for rewards in ([0.0, 1.0], [1.0, 1.0], [0.0, 0.0]):  # group means .5, 1, 0; the window keeps 1 and 0
        vcrs.update("q", torch.tensor(rewards))
    assert vcrs("q") == 0.5


def test_tiers_by_40_and_75_percent_quantiles():
    scores = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]  # 11 values: q40 = .4, q75 = .75
    low, high = tier_thresholds(scores)
    assert math.isclose(low, 0.4) and math.isclose(high, 0.75)
    tiers = [assign_tier(s, (low, high)) for s in scores]
    assert tiers == ["hard"] * 5 + ["medium"] * 3 + ["easy"] * 3


def test_buffer_tiers_move_with_the_distribution_and_respect_capacity():
    buffer = StratifiedReplayBuffer(capacity=10)  # tiers hold 4 / 3 / 2
    for step, mean in enumerate([0.0, 0.25, 0.5, 0.75, 1.0]):
        buffer.add(group(f"q{step}", mean, step))
    # R(q) = 0, .25, .5, .75, 1: q40 = .4, q75 = .75 -> hard {0, .25}, medium {.5, .75}, easy {1}
    assert {t: [g.prompt for g in gs] for t, gs in buffer.tiers.items()} == {
        "hard": ["q0", "q1"],
        "medium": ["q2", "q3"],
        "easy": ["q4"],
    }
    for step in range(5, 12):  # seven more hard groups: the hard tier keeps its 4 newest
        buffer.add(group(f"h{step}", 0.0, step))
    assert len(buffer.tiers["hard"]) == 4 and [g.step for g in buffer.tiers["hard"]] == [8, 9, 10, 11]
    assert len(buffer) <= 10


def test_sampling_follows_tier_shares():
    buffer = StratifiedReplayBuffer(capacity=100, seed=1)
    for step in range(10):  # R(q) = 0 .. 0.9: q40 = .36, q75 = .675 -> 4 hard, 3 medium, 3 easy
        buffer.add(group(f"q{step}", step / 10, step))
    assert [len(buffer.tiers[t]) for t in ("hard", "medium", "easy")] == [4, 3, 3]
    drawn = buffer.sample(2000)
    shares = [sum(buffer.tier_of(g.prompt) == t for g in drawn) / 2000 for t in ("hard", "medium", "easy")]
    assert all(abs(a - b) < 0.04 for a, b in zip(shares, [0.40, 0.35, 0.25], strict=True))


def test_vcrs_advantage_eq_11():
    rewards, baselines = torch.tensor([1.0, 0.0, 1.0, 0.0]), torch.tensor([0.25, 0.25, 0.75, 0.75])
    sigma = torch.tensor([1.0, 0.0, 1.0, 0.0]).std()  # 0.5774: the replayed batch's std
    expected = torch.tensor([0.75, -0.25, 0.25, -0.75]) / (sigma + 1e-4)
    assert torch.allclose(vcrs_advantages(rewards, baselines), expected)
    # an all-correct replayed group still has a signal (no vanishing advantage) when R(q) < 1
    assert (vcrs_advantages(torch.ones(2), torch.tensor([0.5, 0.5])) > 0).all()


def test_importance_ratio_eq_4_and_alpha_weight_eq_3():
    logps = torch.log(torch.tensor([[0.5, 0.2, 0.9]]))
    behaviour = torch.log(torch.tensor([[0.25, 0.4, 0.9]]))
    ratio = importance_ratio(logps, behaviour, torch.tensor([[1.0, 1.0, 0.0]]))
    assert torch.allclose(ratio, torch.tensor([[2.0, 0.5, 0.0]]))
    weighted = weight_off_policy(torch.tensor([1.0, 1.0]), torch.tensor([False, True]))
    assert torch.allclose(weighted, torch.tensor([1.0, 0.6]))
    assert off_policy_groups(4) == 4 and off_policy_groups(2, (4, 2)) == 1


def test_state_round_trip_through_torch_save(tmp_path):
    buffer = StratifiedReplayBuffer(capacity=10)
    for step, mean in enumerate([0.0, 1.0, 0.5]):
        buffer.add(group(f"q{step}", mean, step))
    torch.save(buffer.state_dict(), tmp_path / "replay.pt")
    restored = StratifiedReplayBuffer()
    restored.load_state_dict(torch.load(tmp_path / "replay.pt", weights_only=False))
    assert restored.vcrs("q1") == 1.0 and restored.tier_of("q0") == buffer.tier_of("q0") == "hard"
    assert [g.prompt for g in restored.sample(5)] == [g.prompt for g in buffer.sample(5)]  # same RNG state
