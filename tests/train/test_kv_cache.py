"""The growing key-value cache decodes what HF's `DynamicCache` decodes, through crops, batch selections and copies."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from train.kv_cache import GrowingLayer, cache_over, growing_cache


@pytest.fixture
def model(tiny_llama):
    return tiny_llama


def left_padded_batch() -> tuple[torch.Tensor, torch.Tensor]:
    rows = [[5, 9, 12, 3, 40, 7, 22], [8, 30, 2]]
    width = max(len(r) for r in rows)
    ids = torch.tensor([[0] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    return ids, mask


def generate(model, cache):
    ids, mask = left_padded_batch()
    with torch.no_grad():
        return model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=20,
            do_sample=False,
            pad_token_id=0,
            eos_token_id=None,
            output_scores=True,
            return_dict_in_generate=True,
            cache=cache,
        )


def test_generate_over_a_growing_cache_is_generate_over_a_dynamic_one(model):
    expected = generate(model, DynamicCache())
    got = generate(model, growing_cache(spare=3))  # full every third step: a new buffer five times
    assert got.sequences.tolist() == expected.sequences.tolist()
    for scores, reference in zip(got.scores, expected.scores, strict=True):
        torch.testing.assert_close(scores, reference, rtol=0, atol=1e-5)
    assert all(isinstance(layer, GrowingLayer) for layer in got.cache.layers)
    buffer = got.cache.layers[0].buffers[0]
    assert got.cache.layers[0].keys.data_ptr() == buffer.data_ptr()  # attention read a view, not a copy


def test_a_prefilled_growing_cache_continues_where_it_stops(model):
    ids, mask = left_padded_batch()
    with torch.no_grad():
        prefix = model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], use_cache=True).cache
    states = [(layer.keys, layer.values) for layer in prefix.layers]
    expected = generate(model, DynamicCache(ddp_cache_data=states))
    got = generate(model, growing_cache(states, spare=4))
    assert got.sequences.tolist() == expected.sequences.tolist()
    for scores, reference in zip(got.scores, expected.scores, strict=True):
        torch.testing.assert_close(scores, reference, rtol=0, atol=1e-5)


def test_a_cache_over_views_continues_like_a_copy_and_leaves_them_as_they_were(model):
    ids, mask = left_padded_batch()
    with torch.no_grad():
        prefix = model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], use_cache=True).cache
    cut = [(layer.keys[..., :-1, :], layer.values[..., :-1, :]) for layer in prefix.layers]  # views, one token short
    kept = [(keys.clone(), values.clone()) for keys, values in cut]
    over = cache_over(cut)
    assert over.layers[0].keys.data_ptr() == prefix.layers[0].keys.data_ptr()  # no copy was made
    with torch.no_grad():
        short_ids, short_mask = ids[:, :-1], mask[:, :-1]
        expected = model(
            input_ids=short_ids[:, -1:], attention_mask=short_mask, cache=DynamicCache(ddp_cache_data=kept)
        )
        got = model(input_ids=short_ids[:, -1:], attention_mask=short_mask, cache=over)
    torch.testing.assert_close(got.logits, expected.logits, rtol=0, atol=1e-6)
    for (keys, values), (kept_keys, kept_values) in zip(cut, kept, strict=True):
        assert torch.equal(keys, kept_keys) and torch.equal(values, kept_values)  # the run wrote into new tensors
    assert over.get_seq_length() == ids.shape[1] - 1


def steps(seed: int, count: int, batch: int = 3) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(batch, 2, 1, 4, generator=generator), torch.randn(batch, 2, 1, 4, generator=generator))
        for _ in range(count)
    ]


@pytest.mark.parametrize("operation", ["crop", "select", "deepcopy", "reset"])
def test_a_growing_layer_holds_what_a_dynamic_layer_holds_after(operation):
    growing, dynamic = GrowingLayer(spare=2), DynamicLayer()
    for keys, values in steps(1, 5):
        growing.update(keys, values), dynamic.update(keys, values)
    if operation == "crop":
        growing.crop(-2), dynamic.crop(-2)
    elif operation == "select":
        indices = torch.tensor([2, 0])
        growing.batch_select_indices(indices), dynamic.batch_select_indices(indices)
    elif operation == "deepcopy":
        growing, dynamic = copy.deepcopy(growing), copy.deepcopy(dynamic)
    else:
        growing.reset(), dynamic.reset()
    batch = 2 if operation == "select" else 3
    for keys, values in steps(2, 4, batch):
        got, expected = growing.update(keys, values), dynamic.update(keys, values)
        for tensor, reference in zip(got, expected, strict=True):
            assert torch.equal(tensor, reference)
    assert growing.keys.data_ptr() == growing.buffers[0].data_ptr()


def test_spare_must_be_positive():
    with pytest.raises(ValueError, match="spare must be at least 1"):
        GrowingLayer(spare=0)
