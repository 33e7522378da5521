"""AVATAR's hinting (seed 000, Sec. 4.1 "Hinting Mechanism", prompt of Fig. 13): when a prompt stays in the Hard tier
and the KL between the current and the behaviour policy is low, a strategy hint is added to its prompt.

Hints come from task templates (CPU, offline) or from an LLM behind an OpenAI-compatible URL given the question and
the ground truth with the paper's instruction never to reveal the answer. Both are `HintMaker`s: `(episode) -> str`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol

from agentcvr.episode import Episode

# One strategy per task kind: how to look, never what the answer is.
TEMPLATES = {
    "BU": "Watch every video for the behaviour the question names before choosing all options that apply.",
    "NC": "Compare what the videos tell in order and look for the piece that continues the story.",
    "CC": "Observe the same step in each video and compare how it is done.",
    "PEA": "Find the moment in the reference clip first, then look at the same moment in the others.",
    "PI": "Locate each clip's key action first, then compare the clips one pair at a time.",
    "FSA": "Find the reference event first, then scan the other video for where it happens.",
    "PSS": "Name the step each segment shows, then order the steps by what must come first.",
    "MSR": "Relate the two views through an object visible in both before judging directions.",
    "MOC": "Count in each view separately and match objects seen in both views before adding.",
    "CCQA": "Observe the corresponding steps in both videos and compare ingredients and tools.",
}

HINT_PROMPT = """You are an expert AI tutor. Your task is to provide a concise, strategic hint to a student model that \
is struggling with a difficult multi-video reasoning problem. The student model is consistently failing this problem \
and has stopped exploring new reasoning paths. Your hint should guide it out of a local minimum without solving the \
problem for it.

[User Query]: {question}
[Options]: {options}
[Ground Truth Answer]: {answer}

Constraints:
- DO NOT reveal or allude to the final answer.
- DO NOT perform the reasoning steps yourself.
- Your hint must be a strategic suggestion (e.g. "focus on the audio first", "compare the start of each video").

Output: Provide ONLY the text of the hint, one short sentence."""


class HintMaker(Protocol):
    def __call__(self, episode: Episode) -> str: ...


class TemplateHints:
    """The task kind's template hint (CPU, no model)."""

    def __call__(self, episode: Episode) -> str:
        if episode.task not in TEMPLATES:
            raise ValueError(f"no hint template for task kind {episode.task!r}: known {', '.join(TEMPLATES)}")
        return TEMPLATES[episode.task]


class LLMHints:
    """Hints written by an LLM at an OpenAI-compatible URL; an answer leaked into the hint is refused."""

    def __init__(self, base_url: str, model: str, api_key: str = "none", timeout: float = 60.0, client=None):
        from openai import OpenAI

        self.model = model
        self.client = client or OpenAI(base_url=base_url, api_key=api_key, timeout=timeout)

    def __call__(self, episode: Episode) -> str:
        prompt = HINT_PROMPT.format(
            question=episode.question, options="; ".join(episode.options) or "(none)", answer=episode.answer
        )
        reply = self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": prompt}], temperature=0.2, max_tokens=80
        )
        hint = (reply.choices[0].message.content or "").strip().strip('"')
        if not hint:
            raise ValueError(f"the hint model returned an empty hint for episode {episode.id}")
        if _leaks(hint, episode):
            raise ValueError(f"the hint for episode {episode.id} reveals the answer {episode.answer!r}: {hint!r}")
        return hint


def _leaks(hint: str, episode: Episode) -> bool:
    answer = str(episode.answer)
    if len(answer) > 2:  # orderings, intervals, free text: the literal answer
        return answer.lower() in hint.lower()
    return any(f"option {letter}" in hint.lower() or f"({letter})" in hint.lower() for letter in answer.lower())


class HintTrigger:
    """Hint a prompt once it was Hard for `patience` checks in a row with KL(current || behaviour) < `max_kl`."""

    def __init__(self, patience: int = 3, max_kl: float = 0.01):
        self.patience, self.max_kl = patience, max_kl
        self.hard_streak: dict[str, int] = defaultdict(int)

    def should_hint(self, prompt: str, tier: str | None, kl: float) -> bool:
        self.hard_streak[prompt] = self.hard_streak[prompt] + 1 if tier == "hard" else 0
        return self.hard_streak[prompt] >= self.patience and kl < self.max_kl


def with_hint(messages: list[dict], hint: str) -> list[dict]:
    """The prompt messages with the hint appended to the last user message (a new list, the input untouched)."""
    last = messages[-1]
    return messages[:-1] + [{**last, "content": f"{last['content']}\nHint: {hint}"}]
