"""Choose a multiple-choice option by the likelihood of its text, not by the letter the model writes.

Small models bind answers to option letters poorly: the embedded 1.5B answers "A" or "B" 29 times in 30 on a bare
reading prompt, whatever the options (`../shared/notes/offline-models.md`). Scoring each option's own text as the
reply ("cloze" scoring, the way lm-evaluation-harness scores multiple choice; Robinson & Wingate, ICLR 2023, find it
the better choice for models with weak symbol binding) takes the letter out of the decision: the option whose text the
model finds most likely after the reports wins. Texts are compared by their mean log-probability per token, so a long
option is not penalized for its length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentcvr.episode import Episode
from agentcvr.policies.option_vote import option_texts

CLOZE_PROMPT = "Which option is correct? Reply with the text of that option only, without its letter."


@dataclass(frozen=True)
class OptionScore:
    """The model's log-probability of an option's text as the whole reply, over its tokens."""

    logprob: float
    tokens: int

    @property
    def mean(self) -> float:
        return self.logprob / max(self.tokens, 1)


# The log-probability of replying exactly `text` to the cloze prompt.
Score = Callable[[str], OptionScore]


@dataclass(frozen=True)
class Cloze:
    """The chosen letter and every option's score, for the trace."""

    letter: str
    scores: tuple[OptionScore, ...]  # in option order

    def summary(self) -> str:
        shown = " ".join(f"{chr(65 + i)} {s.logprob:.2f}/{s.tokens}" for i, s in enumerate(self.scores))
        return f"option likelihoods {shown} -> {self.letter}"


def cloze(episode: Episode, score: Score) -> Cloze:
    """The option whose text has the highest mean log-probability per token; the first one on a tie."""
    scores = tuple(score(text) for text in option_texts(episode.options))
    best = max(range(len(scores)), key=lambda i: (scores[i].mean, -i))
    return Cloze(chr(ord("A") + best), scores)


def literal_grammar(text: str) -> str:
    """A GBNF grammar that allows exactly `text` (JSON string escapes are GBNF string escapes)."""
    import json

    return f"root ::= {json.dumps(text, ensure_ascii=False)}"
