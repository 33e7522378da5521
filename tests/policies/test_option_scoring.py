"""Choosing an option by scoring its text (`agentcvr.policies.option_scoring`), on hand-made scores."""

import pytest

from agentcvr.episode import Episode, VideoRef
from agentcvr.policies.option_scoring import OptionScore, choose, literal_grammar, verify_prompt


def _episode(options: list[str]) -> Episode:
    return Episode(id="e", task="NC", question="Which one?", options=options, videos=[VideoRef(index=1, duration=10.0)])


def test_the_option_with_the_best_mean_logprob_per_token_wins_whatever_its_letter():
    scores = {
        "the red umbrella opens": OptionScore(-2.0, 4),
        "nothing": OptionScore(-1.0, 1),
        "rain": OptionScore(-3.0, 1),
    }
    result = choose(
        _episode(["A. nothing", "B. rain", "C. the red umbrella opens"]), "cloze", lambda text: scores[text]
    )
    assert result.letter == "C"  # -0.5 per token beats -1.0 and -3.0, though its total (-2.0) is not the best
    assert result.scores == (scores["nothing"], scores["rain"], scores["the red umbrella opens"])


def test_the_scorer_sees_the_texts_without_their_letters_and_a_tie_keeps_the_first():
    asked: list[str] = []

    def score(text: str) -> OptionScore:
        asked.append(text)
        return OptionScore(-1.0, 2)

    assert choose(_episode(["A. Video 1", "B) Video 2"]), "verify", score).letter == "A"
    assert asked == ["Video 1", "Video 2"]


def test_the_summary_names_every_score_and_the_choice():
    result = choose(_episode(["A. x", "B. y"]), "cloze", lambda text: OptionScore(-0.5 if text == "y" else -2.25, 1))
    assert result.summary() == "option cloze scores A -2.25/1 B -0.50/1 -> B"


@pytest.mark.parametrize("text", ['He said "go"', "back\\slash", "café – 10 s"])
def test_the_literal_grammar_quotes_any_text(text):
    import json

    grammar = literal_grammar(text)
    assert grammar.startswith("root ::= ") and json.loads(grammar.removeprefix("root ::= ")) == text


def test_the_verification_prompt_names_the_question_and_one_proposed_answer():
    prompt = verify_prompt(_episode(["A. Video 1", "B. Video 2"]), "Video 2")
    assert "Question: Which one?\nProposed answer: Video 2\n" in prompt and prompt.endswith("Reply yes or no.")
