"""A key-value cache that grows in place: HF `DynamicCache`'s sums, without its copy a decoding step.

`DynamicLayer.update` concatenates each step's keys and values onto the whole cache, so decoding a batch of long
contexts copies all of it every token: in this project's CPU rollouts (16 rows of 3-6 k tokens, SmolLM2-135M) that
copy was 65 % of the decoding time (py-spy, session 44). `GrowingLayer` writes the new positions into a buffer with
room to spare and hands attention a view of the filled part; it copies the cache only when the buffer is full (once
every `spare` steps), when it keeps some rows of the batch (their buffers, once), or when something else replaced its
tensors (a crop keeps the view; a deep copy does not, and is copied into a new buffer at the next update).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class GrowingLayer(DynamicLayer):
    """A `DynamicLayer` whose `keys` and `values` are views of buffers `spare` positions longer than needed."""

    def __init__(self, spare: int = 256):
        super().__init__()
        if spare < 1:
            raise ValueError(f"spare must be at least 1 position, not {spare}")
        self.spare = spare
        self.buffers: tuple[torch.Tensor, torch.Tensor] | None = None

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length, new = self.get_seq_length(), key_states.shape[-2]
        if not self._views_of_buffers(key_states) or length + new > self.buffers[0].shape[-2]:
            self.buffers = tuple(
                self._buffer(old, states, length + new + self.spare)
                for old, states in ((self.keys, key_states), (self.values, value_states))
            )
        keys, values = self.buffers
        keys[..., length : length + new, :] = key_states
        values[..., length : length + new, :] = value_states
        self.keys, self.values = keys[..., : length + new, :], values[..., : length + new, :]
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep the rows `indices`: one copy of their buffers, spare positions and all, so the next update writes in
        place."""
        if self.buffers is None or not self._views_of_buffers(self.keys):
            super().batch_select_indices(indices)
            return
        length = self.get_seq_length()
        self.buffers = tuple(buffer[indices] for buffer in self.buffers)
        self.keys, self.values = (buffer[..., :length, :] for buffer in self.buffers)

    def _views_of_buffers(self, states: torch.Tensor) -> bool:
        """Whether `keys` and `values` are still the leading positions of this layer's buffers (not replaced by a
        batch selection, a deep copy or a reset), for a batch of `states`' shape."""
        if self.buffers is None or self.keys is None or self.keys.numel() == 0:
            return False
        return all(
            view.data_ptr() == buffer.data_ptr()
            and view.shape[:2] == buffer.shape[:2] == states.shape[:2]
            and view.stride() == buffer.stride()
            for view, buffer in zip((self.keys, self.values), self.buffers, strict=True)
        )

    @staticmethod
    def _buffer(old: torch.Tensor | None, states: torch.Tensor, capacity: int) -> torch.Tensor:
        """A buffer of `capacity` positions for `states`' batch, heads and width, holding `old` in its first ones."""
        batch, heads, _, width = states.shape
        buffer = states.new_empty((batch, heads, capacity, width))
        if old is not None and old.numel():
            buffer[..., : old.shape[-2], :] = old
        return buffer


def growing_cache(states: Iterable[tuple[torch.Tensor, torch.Tensor]] = (), spare: int = 256) -> DynamicCache:
    """A `DynamicCache` of `GrowingLayer`s holding `states` (a key and a value tensor per model layer), or empty (its
    layers made as the model first updates them)."""
    cache = DynamicCache()
    cache.layer_class_to_replicate = functools.partial(GrowingLayer, spare=spare)
    for index, (keys, values) in enumerate(states):
        cache.update(keys, values, index)
    return cache


def cache_over(states: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> DynamicCache:
    """A `DynamicCache` of `DynamicLayer`s holding `states` themselves, views included: its constructor's
    `ddp_cache_data` copies them. Safe to run a model on: a `DynamicLayer` concatenates into new tensors and never
    writes into the ones it holds."""
    cache = DynamicCache()
    for keys, values in states:
        layer = DynamicLayer()
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys, values
        cache.layers.append(layer)
    return cache
