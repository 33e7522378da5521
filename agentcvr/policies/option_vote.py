"""Answer a multiple-choice question from the agents' reports, asking with the options in several orders.

Small models prefer a letter whatever the question (`../shared/notes/offline-models.md`: the 0.5B answers "B" every
time, the 1.5B leans to "A"): the selection bias of "Large Language Models Are Not Robust Multiple Choice Selectors"
(Zheng et al., ICLR 2024). Their remedy, used here: ask with the options in every cyclic order and average the
probability the model gives each option's *content*; a preference for a slot then adds the same to every option.
The reading prompt puts the reports first and the question with its options last, so the orders share the reports as
a prompt prefix and llama.cpp's cache reads them once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentcvr.episode import Episode

READER_SYSTEM = (
    "You answer a multiple-choice question about several videos that you cannot see. Your team's visual and audio "
    "agents looked and listened; their reports are below. Choose the option the reports support."
)
_LABEL = re.compile(r"^\s*([A-Z])[.)]\s*")

# Ask one reading prompt showing `count` options; return the model's probability for each slot's letter (A, B, ...).
Ask = Callable[[list[dict], int], list[float]]


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
    """The chosen option (original letter), each order's own choice and the averaged probabilities, for the trace."""

    letter: str
    ballots: tuple[str, ...]  # original letters, the most probable in each order
    scores: tuple[float, ...]  # per original option: mean probability over the orders

    def summary(self) -> str:
        best = self.scores[ord(self.letter) - ord("A")]
        chosen = " ".join(self.ballots)
        return f"options asked in {len(self.ballots)} orders, chose {chosen}; mean p {best:.2f} -> {self.letter}"


def vote(episode: Episode, reports: Sequence[str], ask: Ask, orders: int) -> Vote:
    """The option of highest mean probability over the rotations; a tie goes to the first order's choice."""
    count = len(episode.options)
    scores = [0.0] * count
    ballots = []
    rotated = rotations(count, orders)
    for order in rotated:
        probabilities = ask(reading_messages(episode, reports, order), count)
        for slot, index in enumerate(order):
            scores[index] += probabilities[slot] / len(rotated)
        ballots.append(_letter(order[max(range(count), key=lambda slot: probabilities[slot])]))
    first = ord(ballots[0]) - ord("A")
    best = max(range(count), key=lambda index: (round(scores[index], 9), index == first))
    return Vote(_letter(best), tuple(ballots), tuple(scores))


def _letter(index: int) -> str:
    return chr(ord("A") + index)
