"""GRPO rewards: plain callables `(completions, trace, episode, **kwargs) -> list[float]`, logged separately by TRL.

`trace` (the `EpisodeResult` of each rollout) and `episode` come from `train.rollout.RolloutFunc`, so a reward reads
the same record of the episode as the held-out evaluation does.
- `Correctness`: the task registry's reward of the recorded answer (`TaskSpec.reward`): the exact official form by
  default (for FSA the exact interval, as the paper's reward), the dense variant (IoU for FSA, position accuracy for
  PSS, Jaccard for BU) with `dense=True`; 0 without an answer.
- `FormatBonus`: +0.1 when every turn was a valid action AND at least one observe/listen was made before the answer.
  The published code paid it for zero calls too, which rewards answering blind; we do not.
- `EvidenceReward`: the share of the script's evidence facts that the episode's observations contain, a dense
  process reward only a simulator can pay (it knows which facts the answer needs). Always computed and logged
  (`rewards/evidence/mean`); its weight, `reward.evidence`, is 0 unless switched on.
- `TurnCost`: -cost for every turn after the first, so that among rollouts equally right the one that stopped
  looking sooner wins: a second look is paid for only where it changes the answer.

`Correctness` also logs the episode statistics (turns, tool calls, answered share) through TRL's `log_metric`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agentcvr.episode import Episode
from agentcvr.tasks import get_task
from agentcvr.text import facts_found
from agentcvr.trace import EpisodeResult


class Correctness:
    """1.0 for a right answer (or the dense partial credit), 0.0 otherwise."""

    __name__ = "correctness"

    def __init__(self, dense: bool = False):
        self.dense = dense

    def __call__(
        self, completions: list, trace: list[EpisodeResult], episode: list[Episode], log_metric=None, **kwargs
    ) -> list[float]:
        rewards = [score(result, ep, self.dense) for result, ep in zip(trace, episode, strict=True)]
        if log_metric is not None and trace:
            n = len(trace)
            log_metric("episode/turns", sum(result.turns for result in trace) / n)
            log_metric("episode/tool_calls", sum(result.tool_calls for result in trace) / n)
            log_metric("episode/answered", sum(result.answer is not None for result in trace) / n)
            log_metric("episode/invalid_calls", sum(result.format_errors for result in trace) / n)
            log_metric("episode/tool_errors", sum(result.tool_errors for result in trace) / n)  # broken perception
        return rewards


class FormatBonus:
    """`bonus` when every turn was valid and at least one observe/listen preceded an answer."""

    __name__ = "format"

    def __init__(self, bonus: float = 0.1):
        self.bonus = bonus

    def __call__(self, completions: list, trace: list[EpisodeResult], **kwargs) -> list[float]:
        return [self.bonus if well_formed(result) else 0.0 for result in trace]


class TurnCost:
    """`-cost` per policy turn after the first (0 with `cost=0`): looking again must earn its turn."""

    __name__ = "turn_cost"

    def __init__(self, cost: float = 0.0):
        self.cost = cost

    def __call__(self, completions: list, trace: list[EpisodeResult], **kwargs) -> list[float]:
        return [-self.cost * max(0, result.turns - 1) for result in trace]


class EvidenceReward:
    """The share of the episode's evidence facts that its observations delivered (0..1); episodes without known
    evidence (an id missing from `evidence`) earn 0."""

    __name__ = "evidence"

    def __init__(self, evidence: Mapping[str, Sequence[str]]):
        self.evidence = evidence

    def __call__(self, completions: list, trace: list[EpisodeResult], episode: list[Episode], **kwargs) -> list[float]:
        return [evidence_share(result, self.evidence.get(ep.id, ())) for result, ep in zip(trace, episode, strict=True)]


def observed_text(result: EpisodeResult) -> str:
    """Everything the episode's tool calls returned, in order."""
    return " ".join(step.observation or "" for step in result.steps if step.kind == "tool")


def evidence_share(result: EpisodeResult, facts: Sequence[str]) -> float:
    if not facts:
        return 0.0
    found = facts_found(facts, observed_text(result))
    return sum(found) / len(found)


def score(result: EpisodeResult, episode: Episode, dense: bool = False) -> float:
    """The registry's reward of the recorded answer; 0 without one."""
    return 0.0 if result.answer is None else float(get_task(episode.task).reward(result.answer, episode, dense=dense))


def well_formed(result: EpisodeResult) -> bool:
    return (
        result.tool_calls >= 1
        and result.answer is not None
        and result.format_errors == 0
        and not any(step.kind == "tool_error" for step in result.steps)
    )
