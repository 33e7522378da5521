"""AVATAR's off-policy stratified replay buffer (seed 000, Sec. 4.1, Eq. 3-4 and 11; Algorithm 1, lines 5-10).

- VCRS R(q): a prompt's moving-average reward over its last 20 on-policy groups (Sec. 4.4).
- Tiers by dynamic quantiles of R(q) over the stored groups: bottom 40 % Hard, next 35 % Medium, top 25 % Easy; each
  tier has a fixed share of the capacity (10k groups x 40/35/25 %) and drops its oldest groups when full.
- A step mixes on-policy and replayed groups (4:4 by default); replayed groups keep their behaviour log-probs for the
  importance ratio r = pi_theta / pi_off (Eq. 4), their advantage is A = (R - R(q)) / sigma_off (Eq. 11, sigma_off the
  std of the replayed rewards), and their loss term is weighted by alpha = 0.6 (Eq. 3).

The buffer is plain data (`state_dict()` / `load_state_dict()`), so a checkpoint carries it. Mixing the replayed
groups into TRL's batch belongs to the rollout path (issue 10); these are the parts that path calls.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

import torch

TIERS = ("hard", "medium", "easy")
SHARES = {"hard": 0.40, "medium": 0.35, "easy": 0.25}  # AVATAR Sec. 4.1


@dataclass
class ReplayGroup:
    """One prompt's G completions as generated: token tensors, rewards (G,) and behaviour log-probs (G, T)."""

    prompt: str
    rewards: torch.Tensor
    behaviour_logps: torch.Tensor
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)  # prompt_ids, completion_ids, masks
    step: int = 0


class VCRS:
    """Video-Context Reference Score: per-prompt mean reward of its last `window` on-policy groups."""

    def __init__(self, window: int = 20):
        self.window = window
        self.history: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=self.window))

    def update(self, prompt: str, rewards: torch.Tensor) -> None:
        self.history[prompt].append(float(rewards.float().mean()))

    def __call__(self, prompt: str) -> float:
        values = self.history.get(prompt)
        if not values:
            raise KeyError(f"no on-policy group recorded yet for prompt {prompt!r}")
        return sum(values) / len(values)


def tier_thresholds(scores: list[float]) -> tuple[float, float]:
    """The R(q) quantiles at 40 % and 75 % (linear interpolation, as numpy's default)."""
    values = torch.tensor(scores, dtype=torch.float64)
    return float(torch.quantile(values, 0.40)), float(torch.quantile(values, 0.75))


def assign_tier(score: float, thresholds: tuple[float, float]) -> str:
    """Hard at or below the 40 % quantile, Easy above the 75 % one, Medium between."""
    low, high = thresholds
    return "hard" if score <= low else "easy" if score > high else "medium"


def vcrs_advantages(rewards: torch.Tensor, baselines: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """Eq. 11: (R - R(q)) / sigma_off over a replayed batch; rewards (N,), baselines R(q) per row (N,)."""
    sigma = rewards.float().std() if rewards.numel() > 1 else torch.tensor(0.0)
    return (rewards.float() - baselines.float()) / (sigma + eps)


def importance_ratio(logps: torch.Tensor, behaviour_logps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Eq. 4 per token: pi_theta / pi_off = exp(log pi_theta - log pi_off), 0 outside `mask` (B, T)."""
    return torch.exp((logps - behaviour_logps) * mask) * mask


def off_policy_groups(on_policy_groups: int, ratio: tuple[int, int] = (4, 4)) -> int:
    """Replayed groups to add to `on_policy_groups` fresh ones for an on:off ratio (4:4 in the paper)."""
    on, off = ratio
    return math.floor(on_policy_groups * off / on)


def weight_off_policy(advantages: torch.Tensor, is_replayed: torch.Tensor, alpha: float = 0.6) -> torch.Tensor:
    """Eq. 3's J_on + alpha J_off for a loss linear in the advantage: scale the replayed rows' advantages."""
    scale = torch.where(is_replayed, torch.tensor(alpha), torch.tensor(1.0)).to(advantages.dtype)
    return advantages * (scale if advantages.dim() == 1 else scale.unsqueeze(1))


class StratifiedReplayBuffer:
    """Groups tiered by their prompt's VCRS; tiers re-drawn from the current quantiles on every insertion."""

    def __init__(self, capacity: int = 10_000, window: int = 20, seed: int = 0):
        self.capacity = capacity
        self.vcrs = VCRS(window)
        self.tiers: dict[str, list[ReplayGroup]] = {tier: [] for tier in TIERS}
        self.rng = random.Random(seed)

    def __len__(self) -> int:
        return sum(len(groups) for groups in self.tiers.values())

    def tier_capacity(self, tier: str) -> int:
        return int(self.capacity * SHARES[tier])

    def add(self, group: ReplayGroup) -> None:
        """Record an on-policy group: update its prompt's VCRS, store it, re-tier, evict the oldest over capacity."""
        self.vcrs.update(group.prompt, group.rewards)
        groups = [g for tier in TIERS for g in self.tiers[tier]] + [group]
        thresholds = tier_thresholds([self.vcrs(g.prompt) for g in groups])
        self.tiers = {tier: [] for tier in TIERS}
        for g in sorted(groups, key=lambda g: g.step):
            self.tiers[assign_tier(self.vcrs(g.prompt), thresholds)].append(g)
        for tier in TIERS:
            overflow = len(self.tiers[tier]) - self.tier_capacity(tier)
            if overflow > 0:
                del self.tiers[tier][:overflow]  # oldest first

    def tier_of(self, prompt: str) -> str | None:
        for tier in TIERS:
            if any(g.prompt == prompt for g in self.tiers[tier]):
                return tier
        return None

    def sample(self, k: int) -> list[ReplayGroup]:
        """k groups, each from a tier drawn by its share (40/35/25) among the non-empty tiers."""
        chosen = []
        for _ in range(k):
            available = [t for t in TIERS if self.tiers[t]]
            if not available:
                break
            tier = self.rng.choices(available, weights=[SHARES[t] for t in available])[0]
            chosen.append(self.rng.choice(self.tiers[tier]))
        return chosen

    def state_dict(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "window": self.vcrs.window,
            "history": {p: list(v) for p, v in self.vcrs.history.items()},
            "tiers": {t: [vars(g) for g in groups] for t, groups in self.tiers.items()},
            "rng": self.rng.getstate(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.capacity = state["capacity"]
        self.vcrs = VCRS(state["window"])
        for prompt, values in state["history"].items():
            self.vcrs.history[prompt].extend(values)
        self.tiers = {t: [ReplayGroup(**g) for g in state["tiers"][t]] for t in TIERS}
        self.rng.setstate(state["rng"])
