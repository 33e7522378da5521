"""Fact matching that ignores case and punctuation, as a reader of OCR or ASR output does."""

from __future__ import annotations

import doctest

from agentcvr import text


def test_doctests():
    assert doctest.testmod(text).failed == 0
