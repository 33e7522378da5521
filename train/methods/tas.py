"""Temporal Advantage Shaping (AVATAR, seed 000, Eq. 5-6): per-token weights over the model's own tokens.

    w_t = 1 + lambda * (2 t/(L-1) - 1)^2,   t = 0..L-1 over the completion's MODEL tokens only

Tool/observation tokens (TRL's `tool_mask == 0`) and padding are excluded from t and L and get weight 0 (they carry no
loss anyway). The ablation variants of Table 5 keep the same end weight 1 + lambda: linear-decay 1 + lambda (1 - t~)
(planning), linear-incline 1 + lambda t~ (synthesis), uniform 1 (plain GRPO).

`TASTrainer` overrides `_generate_and_score_completions`: it replaces the (B,) advantages by (B, T) ones,
A_{i,t} = w_{i,t} A_i, which TRL 1.16's `_compute_loss` accepts as they are.
"""

from __future__ import annotations

from typing import Literal

import torch

from train.grpo import CVRGRPOTrainer

Variant = Literal["quadratic", "linear-decay", "linear-incline", "uniform"]
VARIANTS: tuple[str, ...] = ("quadratic", "linear-decay", "linear-incline", "uniform")


def tas_weights(model_mask: torch.Tensor, lam: float = 0.3, variant: Variant = "quadratic") -> torch.Tensor:
    """(B, T) weights for a (B, T) 0/1 mask of the model's own completion tokens (completion_mask * tool_mask).

    A completion with one model token gets weight 1 + lambda for every variant but uniform (t~ is taken as 0)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown TAS variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    mask = model_mask.to(torch.float32)
    position = torch.cumsum(mask, dim=1) - 1  # t: index among the model tokens only, (B, T)
    length = mask.sum(dim=1, keepdim=True)  # L per completion, (B, 1)
    t = position / (length - 1).clamp(min=1)  # t~ in [0, 1] (Eq. 5)
    if variant == "quadratic":
        shape = (2 * t - 1) ** 2  # Eq. 6: U-shaped, 1 at both ends, 0 at the middle
    elif variant == "linear-decay":
        shape = 1 - t
    elif variant == "linear-incline":
        shape = t
    else:
        shape = torch.zeros_like(t)
    return (1.0 + lam * shape) * mask


def shape_advantages(
    advantages: torch.Tensor, model_mask: torch.Tensor, lam: float = 0.3, variant: Variant = "quadratic"
) -> torch.Tensor:
    """A^TAS_{i,t} = w_{i,t} * A_i: (B,) or (B, T) advantages -> (B, T)."""
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1)
    return advantages * tas_weights(model_mask, lam, variant).to(advantages.dtype)


class TASTrainer(CVRGRPOTrainer):
    """GRPO whose token advantages follow the TAS curve over each completion's model tokens."""

    tas_lambda: float = 0.3
    tas_variant: Variant = "quadratic"

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        mask = output["completion_mask"]
        if "tool_mask" in output:
            mask = mask * output["tool_mask"]
        output["advantages"] = shape_advantages(output["advantages"], mask, self.tas_lambda, self.tas_variant)
        return output
