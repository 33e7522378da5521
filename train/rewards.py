"""GRPO rewards: plain callables `(completions, environments, **kwargs) -> list[float]`, logged separately by TRL.

- `Correctness`: the task registry's reward of the recorded answer (`TaskSpec.reward`): the exact official form by
  default (for FSA the exact interval, as the paper's reward), the dense variant (IoU for FSA, position accuracy for
  PSS, Jaccard for BU) with `dense=True`; 0 without an answer.
- `FormatBonus`: +0.1 when every tool call was valid AND at least one observe/listen was made before the answer.
  The published code paid it for zero calls too, which rewards answering blind; we do not.

`Correctness` also logs the episode statistics (turns, tool calls, answered share) through TRL's `log_metric`.
"""

from __future__ import annotations

from agentcvr.tasks import get_task
from train.environment import CVREnvironment

# What TRL's tool loop writes when a call could not even reach the environment (unknown tool, bad argument names).
_TRL_TOOL_ERROR = "{'error':"


def assistant_turns(completion: list[dict]) -> int:
    """Assistant messages in one multi-turn completion, not counting the empty close after the answer."""
    turns = [m for m in completion if m.get("role") == "assistant"]
    return sum(bool(m.get("tool_calls")) or bool((m.get("content") or "").strip()) for m in turns)


def trl_tool_errors(completion: list[dict]) -> int:
    return sum(m.get("role") == "tool" and str(m.get("content", "")).startswith(_TRL_TOOL_ERROR) for m in completion)


def malformed_turns(completion: list[dict]) -> int:
    """Assistant text that tried a tool call TRL could not parse (bad JSON inside <tool_call>)."""
    return sum(
        m.get("role") == "assistant" and not m.get("tool_calls") and "tool_call" in (m.get("content") or "")
        for m in completion
    )


class Correctness:
    """1.0 for a right answer (or the dense partial credit), 0.0 otherwise."""

    __name__ = "correctness"

    def __init__(self, dense: bool = False):
        self.dense = dense

    def __call__(self, completions: list, environments: list[CVREnvironment], log_metric=None, **kwargs) -> list[float]:
        rewards = [score(env, self.dense) for env in environments]
        if log_metric is not None and environments:
            n = len(environments)
            log_metric("episode/turns", sum(assistant_turns(c) for c in completions) / n)
            log_metric("episode/tool_calls", sum(env.tool_calls for env in environments) / n)
            log_metric("episode/answered", sum(env.final_answer is not None for env in environments) / n)
            log_metric(
                "episode/invalid_calls",
                sum(env.invalid_calls + trl_tool_errors(c) for env, c in zip(environments, completions, strict=True))
                / n,
            )
        return rewards


class FormatBonus:
    """`bonus` when every tool call was valid and at least one observe/listen preceded an answer."""

    __name__ = "format"

    def __init__(self, bonus: float = 0.1):
        self.bonus = bonus

    def __call__(self, completions: list, environments: list[CVREnvironment], **kwargs) -> list[float]:
        return [
            self.bonus if well_formed(env, completion) else 0.0
            for env, completion in zip(environments, completions, strict=True)
        ]


def score(env: CVREnvironment, dense: bool = False) -> float:
    if env.episode is None or env.final_answer is None:
        return 0.0
    task = get_task(env.episode.task)
    if task.kind == "FSA" and not dense:
        # The paper's reward is exact equality for FSA too; the registry's non-dense FSA score is CrossVid's IoU,
        # which here is the dense option.
        truth = task.normalize(task.official_form(env.episode.answer))
        return float(task.normalize(env.final_answer) == truth)
    return float(task.reward(env.final_answer, env.episode, dense=dense))


def well_formed(env: CVREnvironment, completion: list[dict]) -> bool:
    return (
        env.tool_calls >= 1
        and env.final_answer is not None
        and env.invalid_calls == 0
        and trl_tool_errors(completion) == 0
        and malformed_turns(completion) == 0
    )
