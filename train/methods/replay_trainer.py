"""AVATAR's off-policy step (seed 000, Algorithm 1, lines 5-10) as a GRPOTrainer that overrides one hook.

`_generate_and_score_completions` generates and scores the on-policy groups as usual (Eq. 1 advantages), then
appends K_off = K_on x off/on replayed groups from the stratified buffer: their behaviour log-probs become
`old_per_token_logps`, so TRL's clipped ratio is Eq. 4's pi_theta / pi_off; their advantage is Eq. 11's
(R - R(q)) / sigma_off times alpha (Eq. 3's weight, exact for a loss linear in the advantage). The fresh groups are
then stored (their rewards are the weighted sum TRL logged, behaviour log-probs from a no-grad forward when TRL
skipped it). Hints: a prompt that stayed Hard with a low KL between current and behaviour policy (k3 estimate on
its replayed tokens) gets a hint appended to its prompt from then on.

The buffer and the hints are saved beside each checkpoint (`replay.pt`) and read back on resume.
"""

from __future__ import annotations

import json

import torch

from train.grpo import CVRGRPOTrainer
from train.methods.hints import HintTrigger, with_hint
from train.methods.replay import (
    ReplayGroup,
    StratifiedReplayBuffer,
    off_policy_groups,
    vcrs_advantages,
    weight_off_policy,
)
from train.methods.sidecar import Sidecar

KEYS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "tool_mask")


class ReplayTrainer(CVRGRPOTrainer):
    """GRPO with AVATAR's stratified replay (and optional hints)."""

    replay_capacity: int = 10_000
    replay_ratio: tuple[int, int] = (4, 4)
    replay_alpha: float = 0.6
    replay_window: int = 20
    hint_maker = None  # a HintMaker; None = no hints
    hint_patience: int = 3
    hint_max_kl: float = 0.01
    episodes: dict | None = None  # episode_id -> Episode, for the hint maker (set by build_trainer)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.buffer = StratifiedReplayBuffer(self.replay_capacity, self.replay_window, seed=self.args.seed)
        self.trigger = HintTrigger(self.hint_patience, self.hint_max_kl)
        self.hints: dict[str, str] = {}
        self.add_callback(Sidecar("replay", self._state, self._load_state))

    def _generate_and_score_completions(self, inputs):
        if self.accelerator.num_processes != 1 or self.use_vllm:
            raise NotImplementedError("replay reads the rewards TRL logged for this batch: one process, no vLLM")
        inputs = [self._with_hint(row) for row in inputs]
        out = super()._generate_and_score_completions(inputs)
        n, g = len(inputs), self.num_generations
        rewards = self._logged_rewards(n)
        behaviour = out.get("old_per_token_logps")
        if behaviour is None:
            behaviour = self._logps(self.model, out)
        replayed = self.buffer.sample(off_policy_groups(n // g, self.replay_ratio)) if len(self.buffer) else []
        for k in range(n // g):  # Algorithm 1, line 10: store after sampling
            rows = slice(k * g, (k + 1) * g)
            tensors = {key: out[key][rows].cpu() for key in KEYS if key in out}
            group = ReplayGroup(
                _key(inputs[k * g]), rewards[rows], behaviour[rows].cpu(), tensors, self.state.global_step
            )
            self.buffer.add(group)
        out["old_per_token_logps"] = behaviour
        if replayed:
            out = self._append(out, replayed)
            self.last_batch = out
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["replay/groups"].append(float(len(replayed)))
        self._metrics[mode]["replay/buffer"].append(float(len(self.buffer)))
        self._metrics[mode]["replay/hinted_prompts"].append(float(len(self.hints)))
        return out

    def _append(self, out: dict, groups: list[ReplayGroup]) -> dict:
        device = out["completion_ids"].device
        off = {key: [g.tensors[key] for g in groups] for key in groups[0].tensors}
        off["old_per_token_logps"] = [g.behaviour_logps for g in groups]
        if "sampling_per_token_logps" in out:  # the rollouts' own log-probs; a replayed group's are its behaviour's
            off["sampling_per_token_logps"] = [g.behaviour_logps for g in groups]
        rewards = torch.cat([g.rewards for g in groups])
        baselines = torch.cat([torch.full_like(g.rewards, self.buffer.vcrs(g.prompt)) for g in groups])
        advantages = vcrs_advantages(rewards, baselines)
        pad = self.processing_class.pad_token_id
        merged = dict(out)
        for key, parts in off.items():
            left = key.startswith("prompt")  # prompts are left-padded, completions right-padded
            value = pad if key.endswith("_ids") else 0
            merged[key] = _cat([out[key], *[p.to(device) for p in parts]], left, value)
        replayed = torch.zeros(len(merged["completion_ids"]), dtype=torch.bool, device=device)
        replayed[len(out["completion_ids"]) :] = True
        merged["advantages"] = weight_off_policy(
            torch.cat([out["advantages"], advantages.to(out["advantages"])]), replayed, self.replay_alpha
        )
        mask = merged["completion_mask"] * merged.get("tool_mask", 1)
        merged["num_items_in_batch"] = mask.sum()
        if "ref_per_token_logps" in out:  # beta > 0: the reference log-probs of the whole merged batch
            merged["ref_per_token_logps"] = self._logps(self.ref_model, merged)
        current = self._logps(self.model, {k: v[replayed] for k, v in merged.items() if k in KEYS})
        self._observe_hardness(groups, current, merged["old_per_token_logps"][replayed], mask[replayed])
        return merged

    def _observe_hardness(self, groups, current, behaviour, mask) -> None:
        """Per replayed group: k3 KL estimate between current and behaviour policy on its tokens; trigger hints."""
        if self.hint_maker is None:
            return
        g = self.num_generations
        for k, group in enumerate(groups):
            rows = slice(k * g, (k + 1) * g)
            log_ratio = (current[rows] - behaviour[rows].to(current)) * mask[rows]
            kl = float(((log_ratio.exp() - 1 - log_ratio) * mask[rows]).sum() / mask[rows].sum().clamp(min=1))
            tier = self.buffer.tier_of(group.prompt)
            if group.prompt not in self.hints and self.trigger.should_hint(group.prompt, tier, kl):
                self.hints[group.prompt] = self.hint_maker(self.episodes[group.prompt])

    def _state(self) -> dict:
        return {"buffer": self.buffer.state_dict(), "hints": self.hints}

    def _load_state(self, state: dict) -> None:
        self.buffer.load_state_dict(state["buffer"])
        self.hints = state["hints"]

    def _with_hint(self, row: dict) -> dict:
        hint = self.hints.get(_key(row))
        return row if hint is None else {**row, "prompt": with_hint(row["prompt"], hint)}

    def _logged_rewards(self, n: int) -> torch.Tensor:
        """The weighted reward sum of the last n completions, as TRL logged it (NaN rewards count 0)."""
        per_func = torch.tensor([list(self._logs["rewards"][name])[-n:] for name in self.reward_func_names]).T
        return (per_func.nan_to_num(0.0) * self.reward_weights.to(per_func.dtype)).sum(dim=1)

    @torch.no_grad()
    def _logps(self, model, batch: dict) -> torch.Tensor:
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        size = batch["completion_ids"].size(1)
        logps, _, _ = self._get_per_token_logps_and_entropies(model, ids, attention, size, batch_size=ids.size(0))
        return logps


def _key(row: dict) -> str:
    return str(row.get("episode_id") or json.dumps(row["prompt"], sort_keys=True))


def _cat(parts: list[torch.Tensor], left: bool, value: float) -> torch.Tensor:
    """Concatenate (b, t) tensors along the batch after padding their time axis to the longest."""
    width = max(p.size(1) for p in parts)
    padded = []
    for p in parts:
        fill = torch.full((p.size(0), width - p.size(1)), value, dtype=p.dtype, device=p.device)
        padded.append(torch.cat([fill, p] if left else [p, fill], dim=1))
    return torch.cat(padded)
