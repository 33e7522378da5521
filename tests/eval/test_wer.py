"""Word error rate: the normalizer and the corpus rate, one reason per row."""

from __future__ import annotations

import doctest

import pytest

import eval.wer
from eval.wer import word_error_rate


@pytest.mark.parametrize(
    ("reference", "hypothesis", "rate"),
    [
        ("Fail again. Fail better.", "fail again, fail better", 0.0),  # case and punctuation do not count
        ("It leaves at seven thirty.", "It leaves at 7.30", 0.0),  # number words match digits
        ("We're making boxty.", "We are making boxty", 0.0),  # contractions spelled out
        ("the dog is fast", "the nog is fast", 0.25),  # one substitution in four words
        ("the dog is fast", "the dog is very fast", 0.25),  # one insertion
        ("the dog is fast", "", 1.0),  # everything deleted
    ],
)
def test_word_error_rate(reference, hypothesis, rate):
    assert word_error_rate([reference], [hypothesis]) == pytest.approx(rate)


def test_corpus_rate_weights_by_reference_length():
    assert word_error_rate(["a b c d", "e f"], ["a b c d", "x f"]) == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="references"):
        word_error_rate(["a"], [])


def test_doctests():
    assert doctest.testmod(eval.wer).failed == 0
