"""Whether GRPO's completion budget holds the episodes its warm start learned to make.

A multi-turn rollout's completion is every token after the first prompt: the policy's turns and the observations
between them, capped at `grpo.max_completion_length`. An episode that reaches the cap ends unanswered and earns
nothing. When the teacher's own episodes of a kind do not fit, every rollout that behaves like the warm start scores
0 there and only the rollouts that look less get answered, so GRPO is paid to stop looking. Session 18 found this on
a GPU: gpu-looker's 1,536 tokens against ~2,240 for the scan teacher's NC episodes (four looks and four listens of
600 characters); the run dropped NC's listen turn. `check_completion_budget` refuses such a run before it starts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits, Perception, Policy
from agentcvr.script import Script

CUT_SHARE = 0.25  # more of a kind's teacher episodes cut than this: the kind is trained to look less
Render = Callable[[list[dict], bool], int]  # (messages, add a generation prompt) -> tokens


def teacher_completion_tokens(
    teacher: Policy, perception: Perception, scripts: Sequence[Script], limits: Limits, tokens: Render
) -> dict[str, list[int]]:
    """Per task kind, the completion tokens of the teacher's episode on each script: the whole conversation's tokens
    less its first prompt's (with the generation prompt), as a rollout counts them."""
    agent = Agent(teacher, perception, limits)
    lengths: dict[str, list[int]] = defaultdict(list)
    for script in scripts:
        _, messages = agent.converse(script.episode)
        first = next(i for i, message in enumerate(messages) if message["role"] == "assistant")
        lengths[script.task].append(tokens(messages, False) - tokens(messages[:first], True))
    return dict(lengths)


def check_completion_budget(lengths: dict[str, list[int]], budget: int, teacher: str) -> None:
    """Raise ValueError naming the kinds where more than `CUT_SHARE` of the teacher's episodes exceed `budget`, and
    the budget that would hold every episode measured."""
    cut = {k: values for k, values in lengths.items() if sum(v > budget for v in values) > CUT_SHARE * len(values)}
    if not cut:
        return
    needed = -(-max(v for values in lengths.values() for v in values) // 256) * 256  # rounded up to 256
    kinds = "; ".join(
        f"{kind}: {sum(v > budget for v in values)} of {len(values)}, up to {max(values)} tokens"
        for kind, values in sorted(cut.items())
    )
    raise ValueError(
        f"grpo.max_completion_length={budget} cuts the {teacher} teacher's episodes ({kinds}): those rollouts would "
        f"end unanswered, so GRPO would pay for looking less. Raise grpo.max_completion_length to at least {needed}, "
        "or shorten agent.max_observation_chars."
    )
