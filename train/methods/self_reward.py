"""AVATAR's self-reward (seed 000, Eq. 9-10) and the LLM-judge reward hook (Sec. 4.3 (4), prompt of Fig. 14).

R_self(o_i) = 1 if o_i is the group's majority answer else 0; ties go to the answer whose completions have the highest
mean token likelihood. Both rewards are TRL reward callables `(completions, **kwargs) -> list[float | None]`.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence


def majority_answer(answers: Sequence[str | None], likelihoods: Sequence[float]) -> str | None:
    """Eq. 9 over one group: the most common non-empty answer; a tie goes to the highest mean likelihood."""
    votes: dict[str, list[float]] = defaultdict(list)
    for answer, likelihood in zip(answers, likelihoods, strict=True):
        if answer is not None:
            votes[answer].append(likelihood)
    if not votes:
        return None
    return max(votes, key=lambda a: (len(votes[a]), sum(votes[a]) / len(votes[a])))


def self_rewards(answers: Sequence[str | None], likelihoods: Sequence[float], group_size: int) -> list[float]:
    """Eq. 10 for consecutive groups of `group_size` (TRL's order): 1 for the group's majority answer, else 0."""
    rewards = []
    for start in range(0, len(answers), group_size):
        group = answers[start : start + group_size]
        winner = majority_answer(group, likelihoods[start : start + group_size])
        rewards += [float(a is not None and a == winner) for a in group]
    return rewards


JUDGE_PROMPT = """You are a meticulous evaluator of multi-video reasoning. Score the model's reasoning from 0.0 to 1.0 \
for logical consistency and correct use of what it observed, independently of whether the final answer is right.

[User Query]: {question}
[Ground Truth Answer]: {answer}
[Model's Trajectory]: {trajectory}

Return ONLY a JSON object {{"score": <0.0-1.0>}}."""


class JudgeReward:
    """R_judge: a frozen LLM at an OpenAI-compatible URL scores each trajectory in [0, 1]; None when unparseable
    (TRL then leaves that completion out of this reward)."""

    __name__ = "judge"

    def __init__(self, base_url: str, model: str, api_key: str = "none", client=None):
        from openai import OpenAI

        self.model = model
        self.client = client or OpenAI(base_url=base_url, api_key=api_key)

    def __call__(self, completions: list, question: list[str], answer: list, **kwargs) -> list[float | None]:
        return [self.score(q, a, c) for q, a, c in zip(question, answer, completions, strict=True)]

    def score(self, question: str, answer, completion) -> float | None:
        trajectory = completion if isinstance(completion, str) else json.dumps(completion)[:4000]
        reply = self.client.chat.completions.create(
            model=self.model,
            messages=[
                {
                    "role": "user",
                    "content": JUDGE_PROMPT.format(question=question, answer=answer, trajectory=trajectory),
                }
            ],
            temperature=0.0,
        )
        match = re.search(r'"score"\s*:\s*([0-9.]+)', reply.choices[0].message.content or "")
        return None if match is None else min(max(float(match.group(1)), 0.0), 1.0)
