"""TAS weights (AVATAR Eq. 5-6) on hand-computed cases: shape, masking of tool tokens, variants."""

from __future__ import annotations

import pytest
import torch

from train.methods.tas import shape_advantages, tas_weights


def test_quadratic_weights_over_five_model_tokens():
    # t~ = 0, .25, .5, .75, 1 -> (2t~-1)^2 = 1, .25, 0, .25, 1 -> w = 1 + 0.3 x that
    w = tas_weights(torch.ones(1, 5), lam=0.3)
    assert torch.allclose(w, torch.tensor([[1.3, 1.075, 1.0, 1.075, 1.3]]))


def test_tool_tokens_are_skipped_in_t_and_L_and_padding_gets_zero():
    # model tokens at 0,1,4,5,6 (2,3 are a tool result), 7 is padding: L = 5 as above
    mask = torch.tensor([[1, 1, 0, 0, 1, 1, 1, 0]])
    w = tas_weights(mask, lam=0.3)
    assert torch.allclose(w, torch.tensor([[1.3, 1.075, 0, 0, 1.0, 1.075, 1.3, 0]]))


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        ("linear-decay", [1.3, 1.15, 1.0]),  # 1 + lam (1 - t~): planning first
        ("linear-incline", [1.0, 1.15, 1.3]),  # 1 + lam t~: synthesis last
        ("uniform", [1.0, 1.0, 1.0]),  # plain GRPO
        ("quadratic", [1.3, 1.0, 1.3]),  # the U of Eq. 6
    ],
)
def test_variants_on_three_tokens(variant, expected):
    assert torch.allclose(tas_weights(torch.ones(1, 3), 0.3, variant), torch.tensor([expected]))


def test_single_token_and_empty_rows():
    w = tas_weights(torch.tensor([[1, 0, 0], [0, 0, 0]]), lam=0.5)
    assert torch.allclose(w, torch.tensor([[1.5, 0, 0], [0, 0, 0]]))  # t~ = 0 for L = 1; no tokens, no weight


def test_shaped_advantages_are_per_token_and_keep_the_sign():
    adv = torch.tensor([2.0, -1.0])
    shaped = shape_advantages(adv, torch.ones(2, 3), lam=0.3)
    assert shaped.shape == (2, 3)
    assert torch.allclose(shaped, torch.tensor([[2.6, 2.0, 2.6], [-1.3, -1.0, -1.3]]))


def test_unknown_variant_names_the_valid_ones():
    with pytest.raises(ValueError, match="linear-decay"):
        tas_weights(torch.ones(1, 3), variant="cubic")  # type: ignore[arg-type]
