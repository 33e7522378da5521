"""Choose a multiple-choice option by scoring each option's text, not by the letter the model writes.

Small models bind answers to option letters poorly: the embedded 1.5B answers "A" or "B" 29 times in 30 on a bare
reading prompt, whatever the options (`../shared/notes/offline-models.md`). Two ways take the letter out of the
decision, each asked after the reports, option by option (the conversation stays in llama.cpp's prompt cache):
- `cloze`: the option's own text as the whole reply, compared by mean log-probability per token (how
  lm-evaluation-harness scores multiple choice; Robinson & Wingate, ICLR 2023, find it the better choice for models
  with weak symbol binding);
- `verify`: "is this proposed answer correct?", compared by log P(yes) - log P(no): one judgement per option, so a
  preference for "yes" is the same for every option and cancels out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agentcvr.episode import Episode
from agentcvr.policies.option_vote import option_texts

Scoring = Literal["letter", "cloze", "verify"]
CLOZE_PROMPT = "Which option is correct? Reply with the text of that option only, without its letter."
YES_OR_NO = 'root ::= "yes" | "no"'


@dataclass(frozen=True)
class OptionScore:
    """An option's score summed over `tokens`: cloze, the text's log-probability; verify, log P(yes) - log P(no)."""

    logprob: float
    tokens: int = 1

    @property
    def mean(self) -> float:
        return self.logprob / max(self.tokens, 1)


# The score of one option, given its text.
Score = Callable[[str], OptionScore]


@dataclass(frozen=True)
class Choice:
    """The chosen letter and every option's score, for the trace."""

    scoring: Scoring
    letter: str
    scores: tuple[OptionScore, ...]  # in option order

    def summary(self) -> str:
        shown = " ".join(f"{chr(65 + i)} {s.logprob:.2f}/{s.tokens}" for i, s in enumerate(self.scores))
        return f"option {self.scoring} scores {shown} -> {self.letter}"


def choose(episode: Episode, scoring: Scoring, score: Score) -> Choice:
    """The option with the highest mean score per token; the first one on a tie."""
    scores = tuple(score(text) for text in option_texts(episode.options))
    best = max(range(len(scores)), key=lambda i: (scores[i].mean, -i))
    return Choice(scoring, chr(ord("A") + best), scores)


def verify_prompt(episode: Episode, text: str) -> str:
    """The question with one proposed answer, to be judged yes or no from the reports."""
    return (
        f"Check one proposed answer against the reports.\nQuestion: {episode.question}\nProposed answer: {text}\n"
        "Is the proposed answer correct? Reply yes or no."
    )


def literal_grammar(text: str) -> str:
    """A GBNF grammar that allows exactly `text` (JSON string escapes are GBNF string escapes)."""
    return f"root ::= {json.dumps(text, ensure_ascii=False)}"
