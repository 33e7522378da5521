"""Answer a multiple-choice question from the agents' reports, asking with the options in several orders.

Small models prefer a letter whatever the question (`../shared/notes/offline-models.md`: the 0.5B answers "B" every
time, the 1.5B leans to "A"). Asking again with the options rotated and voting on the option *content* cancels that
preference: the selection bias of "Large Language Models Are Not Robust Multiple Choice Selectors" (Zheng et al.,
ICLR 2024), whose permutation remedy this is. The reading prompt puts the reports first and the question with its
options last, so the rotations share the reports as a prompt prefix and llama.cpp's cache reads them once.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentcvr.episode import Episode

READER_SYSTEM = (
    "You answer a multiple-choice question about several videos that you cannot see. Your team's visual and audio "
    "agents looked and listened; their reports are below. Choose the option the reports support."
)
_LABEL = re.compile(r"^\s*([A-Z])[.)]\s*")

# Ask one reading prompt with options shown in this order; return the letter the model chose (A, B, ...).
Ask = Callable[[list[dict], int], str]


def option_texts(options: Sequence[str]) -> list[str]:
    """The options without their 'A. ' labels."""
    return [_LABEL.sub("", option, count=1) for option in options]


def rotations(count: int, orders: int) -> list[list[int]]:
    """`orders` cyclic shifts of `count` options (each option in a different slot each time), the original first."""
    return [[(shift + slot) % count for slot in range(count)] for shift in range(min(orders, count))]


def reading_messages(episode: Episode, reports: Sequence[str], order: Sequence[int]) -> list[dict]:
    """The reading prompt: reports first (the shared prefix), then the question with options in `order`."""
    texts = option_texts(episode.options)
    shown = "\n".join(f"{chr(ord('A') + slot)}. {texts[index]}" for slot, index in enumerate(order))
    body = "\n\n".join(reports) if reports else "(no reports)"
    question = f"Question: {episode.question}\nOptions:\n{shown}\nAnswer with the letter of one option."
    return [
        {"role": "system", "content": READER_SYSTEM},
        {"role": "user", "content": f"Reports:\n{body}\n\n{question}"},
    ]


@dataclass(frozen=True)
class Vote:
    """The chosen option (original letter) and what each order said, for the trace."""

    letter: str
    ballots: tuple[str, ...]  # original letters, one per order

    def summary(self) -> str:
        return f"options asked in {len(self.ballots)} orders; votes {' '.join(self.ballots)} -> {self.letter}"


def vote(episode: Episode, reports: Sequence[str], ask: Ask, orders: int) -> Vote:
    """Majority of the original options chosen over the rotations; a tie goes to the option chosen first."""
    ballots = []
    for order in rotations(len(episode.options), orders):
        letter = ask(reading_messages(episode, reports, order), len(order))
        ballots.append(chr(ord("A") + order[ord(letter) - ord("A")]))
    counts = Counter(ballots)
    best = max(counts.values())
    return Vote(next(b for b in ballots if counts[b] == best), tuple(ballots))
