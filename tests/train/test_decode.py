"""`decode_rows` samples what HF `generate` samples, and lets a row go once it stops."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from train.decode import decode_rows
from train.kv_cache import growing_cache
from train.rollout import sampling_kwargs

ROWS = [[5, 9, 12, 3, 40, 7, 22], [8, 30, 2], [17, 4, 4, 61, 33]]


def padded(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.tensor([[0] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    return ids, mask


def generated(model, rows, stop: int | None, sampling: dict, new: int = 16) -> list[tuple[list[int], list[float]]]:
    """HF `generate`'s turns, each cut after its first stop, and their log-probs from the warped scores."""
    ids, mask = padded(rows)
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=new,
            pad_token_id=0,
            eos_token_id=stop,
            output_scores=True,
            return_dict_in_generate=True,
            cache=DynamicCache(),
            **sampling,
        )
    turns = []
    for b, row in enumerate(out.sequences[:, ids.shape[1] :].tolist()):
        end = row.index(stop) + 1 if stop in row else len(row)
        turns.append((row[:end], [torch.log_softmax(out.scores[t][b], -1)[row[t]].item() for t in range(end)]))
    return turns


def a_stop_that_ends_rows_apart(model) -> int:
    """A token some row writes early and another not at all within the budget, so the rows stop at different steps."""
    free = [tokens for tokens, _ in generated(model, ROWS, None, sampling_kwargs(0.0))]
    for token in free[1][:6]:
        lengths = {(row.index(token) + 1 if token in row else len(row)) for row in free}
        if len(lengths) == 3:
            return token
    pytest.skip("no token of the second row ends the three rows at three different steps")


def test_greedy_rows_decode_what_generate_decodes_and_leave_as_they_stop(tiny_llama):
    stop = a_stop_that_ends_rows_apart(tiny_llama)
    expected = generated(tiny_llama, ROWS, stop, sampling_kwargs(0.0))
    ids, mask = padded(ROWS)
    with torch.no_grad():
        got = decode_rows(tiny_llama, ids, mask, growing_cache(spare=4), 16, stop, sampling_kwargs(0.0))
    for row, (tokens, logprobs) in zip(got, expected, strict=True):
        assert row.tokens == tokens
        assert row.logprobs == pytest.approx(logprobs, abs=1e-5)
    longest = max(len(tokens) for tokens, _ in expected)
    assert max(row.steps for row in got) == longest
    assert sum(row.steps for row in got) < len(ROWS) * longest  # stopped rows went before the longest ended


def test_a_sampled_row_draws_what_generate_draws(tiny_llama):
    sampling = sampling_kwargs(0.7, top_p=0.9, top_k=20)
    torch.manual_seed(3)
    ((tokens, logprobs),) = generated(tiny_llama, ROWS[:1], None, sampling)
    ids, mask = padded(ROWS[:1])
    torch.manual_seed(3)
    with torch.no_grad():
        (row,) = decode_rows(tiny_llama, ids, mask, growing_cache(), 16, 63, sampling)
    assert row.tokens == tokens
    assert row.logprobs == pytest.approx(logprobs, abs=1e-5)


def test_kept_states_are_the_rows_own_cache_from_a_prefilled_batch(tiny_llama):
    stop = a_stop_that_ends_rows_apart(tiny_llama)
    ids, mask = padded(ROWS)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        prefix = tiny_llama(
            input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions[:, :-1], use_cache=True
        ).cache
        states = [(layer.keys, layer.values) for layer in prefix.layers]
        cache = growing_cache(states, spare=2)
        got = decode_rows(tiny_llama, ids, mask, cache, 16, stop, sampling_kwargs(0.0), keep_states=True)
    expected = generated(tiny_llama, ROWS, stop, sampling_kwargs(0.0))
    assert [row.tokens for row in got] == [tokens for tokens, _ in expected]
    for row, decoded in zip(ROWS, got, strict=True):
        with torch.no_grad():  # the row and its turn but the last token, run alone
            own = tiny_llama(input_ids=torch.tensor([row + decoded.tokens[:-1]]), use_cache=True).cache
        for (keys, values), layer in zip(decoded.states, own.layers, strict=True):
            torch.testing.assert_close(keys, layer.keys, rtol=0, atol=1e-5)
            torch.testing.assert_close(values, layer.values, rtol=0, atol=1e-5)


@pytest.mark.parametrize("share", [0.0, 1.5])
def test_a_compaction_share_outside_zero_to_one_is_refused(tiny_llama, share):
    ids, mask = padded(ROWS)
    with pytest.raises(ValueError, match="compact_below"):
        decode_rows(tiny_llama, ids, mask, growing_cache(), 4, 63, sampling_kwargs(0.0), compact_below=share)
