"""GRPO-CARE (Algorithm 1) on hand-computed groups: selection, clipping, margin, bonus, advantages, EMA."""

from __future__ import annotations

import torch

from train.methods.care import answer_mask, consistency_bonus, ema_update, group_advantages, selected


def test_selection_uses_max_of_group_mean_and_floor():
    acc = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.05, 0.0, 0.0, 0.0])  # two groups of 4
    # group 1: mean .5 -> the two 1.0; group 2: mean .0125 < floor .1 -> nobody (0.05 < 0.1)
    assert selected(acc, 4).tolist() == [True, False, True, False, False, False, False, False]


def test_bonus_goes_to_selected_at_or_above_mean_clipped_likelihood_minus_margin():
    acc = torch.tensor([1.0, 1.0, 1.0, 0.0])  # mean .75: the three right ones are selected
    likelihood = torch.tensor([0.99, 0.80, 0.88, 0.99])  # p~ = .95, .80, .88 (the 4th is not selected)
    # baseline = mean(.95, .80, .88) - .01 = .8767 - .01 = .8667 -> .95 and .88 are consistent, .80 is not
    bonus = consistency_bonus(acc, likelihood, 4)
    assert torch.allclose(bonus, torch.tensor([0.5, 0.0, 0.5, 0.0]))


def test_bonus_is_scaled_by_accuracy_and_ignores_nan_of_unselected():
    acc = torch.tensor([0.6, 0.2])  # mean .4: only the first is selected
    bonus = consistency_bonus(acc, torch.tensor([0.3, float("nan")]), 2)
    assert torch.allclose(bonus, torch.tensor([0.3, 0.0]))  # 0.5 x 0.6, alone above its own mean - margin


def test_group_advantages_match_trl_formula():
    rewards = torch.tensor([1.5, 0.0, 1.0, 0.5])
    std = torch.tensor([1.5, 0.0, 1.0, 0.5]).std()  # unbiased, as TRL's nanstd
    expected = (rewards - 0.75) / (std + 1e-4)
    assert torch.allclose(group_advantages(rewards, 4), expected)
    assert torch.allclose(group_advantages(rewards, 2, "none"), torch.tensor([0.75, -0.75, 0.25, -0.25]))


def test_ema_update_blends_parameters():
    ema, online = torch.nn.Linear(1, 1, bias=False), torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        ema.weight.fill_(1.0)
        online.weight.fill_(3.0)
    ema_update(ema, online, decay=0.995)
    assert torch.isclose(ema.weight, torch.tensor(0.995 * 1 + 0.005 * 3)).all()  # 1.01
    assert online.weight.item() == 3.0


def test_answer_mask_is_the_last_sampled_turn_of_an_answered_rollout():
    # model [0,1], tool [2,3], model (the answer) [4,5], padding [6,7] (masked out by completion_mask)
    mask = torch.tensor([[1, 1, 0, 0, 1, 1, 0, 0], [1, 1, 0, 1, 1, 1, 1, 1]])
    out = answer_mask(mask, [True, False])
    assert out.tolist() == [[0, 0, 0, 0, 1, 1, 0, 0], [0] * 8]  # the second never answered
