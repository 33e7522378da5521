"""GRPO-CARE (seed 001, Algorithm 1): a consistency bonus from an EMA reference model, in place of the KL penalty.

For each group of G completions of one prompt (Algorithm 1, lines 8-20):
    selected_g   = acc_g >= max(mean_g acc, gamma_acc)                  gamma_acc = 0.1
    p_g          = mean over answer tokens of pi_ema(a_i | x, tau, a_<i)   (token probabilities, not log)
    p~_g         = min(p_g, gamma_p)                                    gamma_p = 0.95
    consistent_g = selected_g and p~_g >= mean_{selected} p~ - eps_p    eps_p = 0.01
    R_g          = base_g + lambda_cons * acc_g * consistent_g           lambda_cons = 0.5
and every k = 10 optimizer steps phi <- alpha phi + (1 - alpha) theta with alpha = 0.995 (lines 26-27).

`CARETrainer` overrides `_generate_and_score_completions`: after TRL scored the batch it reads the per-function
rewards TRL just logged, adds the bonus and recomputes the group advantages (the same formula as TRL's
`scale_rewards`); the answer tokens are the last sampled turn of a rollout whose trace recorded an answer (the
agent's episode ends at its answer). Run it with
`beta=0` (the paper drops the KL term; `train-sim` sets it). The EMA weights are saved beside each checkpoint.
"""

from __future__ import annotations

import copy

import torch

from train.grpo import CVRGRPOTrainer
from train.methods.sidecar import Sidecar


def selected(acc: torch.Tensor, group_size: int, min_accuracy: float = 0.1) -> torch.Tensor:
    """(N,) bool: accuracy at or above max(group mean, min_accuracy) (Algorithm 1, lines 8-10)."""
    groups = acc.view(-1, group_size)
    baseline = groups.mean(dim=1, keepdim=True).clamp(min=min_accuracy)
    return (groups >= baseline).view(-1)


def consistency_bonus(
    acc: torch.Tensor,
    likelihood: torch.Tensor,
    group_size: int,
    min_accuracy: float = 0.1,
    cap: float = 0.95,
    margin: float = 0.01,
    coefficient: float = 0.5,
) -> torch.Tensor:
    """(N,) bonus lambda_cons * acc * I[consistent] (Algorithm 1, lines 8-20); `likelihood` is read only where
    selected, so unselected entries may hold anything (NaN included)."""
    chosen = selected(acc, group_size, min_accuracy).view(-1, group_size)
    clipped = torch.where(chosen, likelihood.view(-1, group_size).clamp(max=cap), torch.zeros(()))
    count = chosen.sum(dim=1, keepdim=True)
    baseline = clipped.sum(dim=1, keepdim=True) / count.clamp(min=1) - margin  # mean over the selected only
    consistent = chosen & (clipped >= baseline)
    return (coefficient * acc.view(-1, group_size) * consistent).view(-1)


def group_advantages(rewards: torch.Tensor, group_size: int, scale: str = "group") -> torch.Tensor:
    """GRPO advantages (R - mean_group) / (std + 1e-4) exactly as TRL 1.16 computes them (`scale_rewards`)."""
    groups = rewards.view(-1, group_size)
    advantages = (groups - groups.mean(dim=1, keepdim=True)).view(-1)
    if scale == "none":
        return advantages
    std = groups.std(dim=1, keepdim=True).expand_as(groups).reshape(-1) if scale == "group" else rewards.std()
    return advantages / (std + 1e-4)


@torch.no_grad()
def ema_update(ema: torch.nn.Module, online: torch.nn.Module, decay: float = 0.995) -> None:
    """phi <- decay * phi + (1 - decay) * theta, parameter by parameter (Algorithm 1, line 27)."""
    for target, source in zip(ema.parameters(), online.parameters(), strict=True):
        target.mul_(decay).add_(source.detach().to(target.dtype), alpha=1 - decay)


def answer_mask(model_mask: torch.Tensor, answered: list[bool]) -> torch.Tensor:
    """(B, T) mask of the answer turn: the last run of model tokens of each row that answered (the agent's episode
    ends at the answer, so its last sampled turn is the answer). A row that never answered gets an empty mask."""
    out = torch.zeros_like(model_mask)
    for b, done in enumerate(answered):
        model_runs = [r for r in _runs(model_mask[b]) if r[2] == 1]
        if done and model_runs:
            out[b, model_runs[-1][0] : model_runs[-1][1]] = 1
    return out


def _runs(row: torch.Tensor) -> list[tuple[int, int, int]]:
    """Maximal runs (start, end, value) of a 0/1 row, ignoring trailing padding handled by the caller."""
    values = row.tolist()
    runs, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            runs.append((start, i, int(values[start])))
            start = i
    return runs


class CARETrainer(CVRGRPOTrainer):
    """GRPO with the CARE consistency bonus; the EMA copy is made at the first generation."""

    care_decay: float = 0.995
    care_every: int = 10
    care_coefficient: float = 0.5
    care_min_accuracy: float = 0.1
    care_cap: float = 0.95
    care_margin: float = 0.01
    care_accuracy_column: int = 0  # the correctness reward in build_trainer's reward list
    ema_model: torch.nn.Module | None = None
    _ema_step: int = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_callback(Sidecar("care_ema", self._state, self._load_state))

    def _state(self) -> dict:
        return {"ema": None if self.ema_model is None else self.ema_model.state_dict(), "step": self._ema_step}

    def _load_state(self, state: dict) -> None:
        """Resume with the saved EMA weights (a fresh copy of the policy would forget the EMA's history)."""
        if state["ema"] is not None:
            self.ema_model = copy.deepcopy(self.accelerator.unwrap_model(self.model)).eval().requires_grad_(False)
            self.ema_model.load_state_dict(state["ema"])
        self._ema_step = state["step"]

    def _generate_and_score_completions(self, inputs):
        if self.accelerator.num_processes != 1:
            raise NotImplementedError("CARE reads the rewards TRL logged for this batch: one process only for now")
        self._refresh_ema()
        output = super()._generate_and_score_completions(inputs)
        n, g = len(inputs), self.num_generations
        per_func = torch.tensor([list(self._logs["rewards"][name])[-n:] for name in self.reward_func_names]).T
        weights = self.reward_weights.to(per_func.dtype)
        base = (per_func.nan_to_num(0.0) * weights).sum(dim=1)
        acc = per_func[:, self.care_accuracy_column].nan_to_num(0.0)
        likelihood = self._answer_likelihood(output)
        bonus = consistency_bonus(
            acc, likelihood, g, self.care_min_accuracy, self.care_cap, self.care_margin, self.care_coefficient
        )
        output["advantages"] = group_advantages(base + bonus, g, self.args.scale_rewards).to(output["advantages"])
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["care/bonus_mean"].append(bonus.mean().item())
        self._metrics[mode]["care/consistent_share"].append((bonus > 0).float().mean().item())
        return output

    def _refresh_ema(self) -> None:
        """Copy the policy at the first call; afterwards blend it in once `care_every` optimizer steps have passed."""
        online = self.accelerator.unwrap_model(self.model)
        if self.ema_model is None:
            self.ema_model = copy.deepcopy(online).eval().requires_grad_(False)
            self._ema_step = self.state.global_step
        elif self.state.global_step - self._ema_step >= self.care_every:
            ema_update(self.ema_model, online, self.care_decay)
            self._ema_step = self.state.global_step

    @torch.no_grad()
    def _answer_likelihood(self, output: dict) -> torch.Tensor:
        """(B,) EMA model's mean token probability of each answer turn given prompt and trajectory (NaN: none)."""
        completion_mask = output["completion_mask"]
        model_mask = completion_mask * output.get("tool_mask", torch.ones_like(completion_mask))
        flags = [row["trace"].answer is not None for row in self.batch_rows]  # TRL put the traces in the rows
        answer = answer_mask(model_mask, flags).to(torch.float32)
        input_ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention = torch.cat([output["prompt_mask"], completion_mask], dim=1)
        logps, _, _ = self._get_per_token_logps_and_entropies(
            self.ema_model, input_ids, attention, output["completion_ids"].size(1), batch_size=input_ids.size(0)
        )
        probabilities = (logps.exp() * answer).sum(dim=1) / answer.sum(dim=1)
        return probabilities.cpu()
