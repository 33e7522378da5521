"""The tiny policy's BPE: digits alone by default; whole numbers with `split_digits=False`, so a time the master copies
from its prompt into a call is one token in both places."""

from __future__ import annotations

from train.tokenizer import train_tokenizer

CORPUS = [f'Reference segment in video 1: {a}-{a + 24} s. {{"start": {a}, "end": {a + 24}}}' for a in range(0, 600, 3)]


def test_whole_numbers_become_single_tokens_and_read_the_same_in_the_prompt_and_the_call():
    tokenizer = train_tokenizer(CORPUS * 3, vocab_size=1200, split_digits=False)
    prompt, call = tokenizer.tokenize("video 1: 399-423 s."), tokenizer.tokenize('{"start": 399, "end": 423}')
    assert {"399", "423"} <= set(prompt) and {"399", "423"} <= set(call)
    assert tokenizer.decode(tokenizer.encode('{"start": 399, "end": 423}')) == '{"start": 399, "end": 423}'


def test_by_default_every_digit_is_its_own_token():
    tokenizer = train_tokenizer(CORPUS * 3, vocab_size=1200)
    assert [t for t in tokenizer.tokenize("399-423") if t.isdigit()] == ["3", "9", "9", "4", "2", "3"]
