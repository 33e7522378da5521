"""Ask a multiple-choice question again with the options in other orders, and take the majority of the answers.

Small models prefer a letter whatever the question (`../shared/notes/offline-models.md`: the 0.5B answers "B" every
time, the 1.5B leans to "A" and "B"): the selection bias of "Large Language Models Are Not Robust Multiple Choice
Selectors" (Zheng et al., ICLR 2024), whose remedy is to permute the options and aggregate. The master re-asks inside
its own conversation, after its last report, so each re-ask reads only the rotated options (the rest is in llama.cpp's
prompt cache) and keeps the model's habit of stating a thought before the answer: asked without one, on a bare
reading prompt, the 1.5B picks the first slot almost every time, whatever the options.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentcvr.episode import Episode, option_texts

# Ask the question again with the options shown in `order`; return the letter chosen in that order's labels.
Ask = Callable[[list[int]], str]


def rotations(count: int, orders: int) -> list[list[int]]:
    """`orders` cyclic shifts of `count` options (each option in a different slot each time), the original first."""
    return [[(shift + slot) % count for slot in range(count)] for shift in range(min(orders, count))]


def reask_message(episode: Episode, order: Sequence[int]) -> dict:
    """The user message that asks the question again with the options in `order`, relabelled A, B, ..."""
    texts = option_texts(episode.options)
    shown = "\n".join(f"{_letter(slot)}. {texts[index]}" for slot, index in enumerate(order))
    return {
        "role": "user",
        "content": f"Answer again from the reports; the options are now in another order.\nQuestion: "
        f"{episode.question}\nOptions:\n{shown}",
    }


@dataclass(frozen=True)
class Vote:
    """The chosen option (original letter) and each order's answer, for the trace."""

    letter: str
    ballots: tuple[str, ...]  # original letters: the turn's own answer first, then one per re-ask

    def summary(self) -> str:
        return f"answers over {len(self.ballots)} option orders {' '.join(self.ballots)} -> {self.letter}"


def vote(episode: Episode, own: str, ask: Ask, orders: int) -> Vote:
    """The majority over the turn's own answer and `orders - 1` re-asks in rotated orders; a tie keeps the own one."""
    ballots = [own]
    for order in rotations(len(episode.options), orders)[1:]:
        ballots.append(_letter(order[ord(ask(order)) - ord("A")]))
    counts = Counter(ballots)
    best = max(counts.values())
    return Vote(own if counts[own] == best else next(b for b in ballots if counts[b] == best), tuple(ballots))


def _letter(index: int) -> str:
    return chr(ord("A") + index)
