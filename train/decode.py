"""Sampling a batch of turns that lets rows go as they stop: HF `generate` without its decoding of padding.

`generate` runs every row of a batch until its longest turn ends, so a row that stopped keeps decoding padding over its
whole key-value cache: in session 46's CPU rollouts (16 rows of 3-6 k tokens) the rows ran 2.0 decoding steps per token
sampled (`timing/decode_run`). `decode_rows` samples what `generate` samples (its temperature, top-k and top-p warpers,
one multinomial draw a step, the log-probs of the warped scores) and drops the stopped rows from the batch and its cache
once a quarter of the rows in it have stopped: a selection copies the live rows' cache, so it is batched, not done
at every stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

LayerStates = list[tuple[torch.Tensor, torch.Tensor]]  # a key and a value tensor per model layer


@dataclass
class Decoded:
    """One row's turn: its sampled tokens (the stop included, when reached), their log-probs under the warped
    distribution, the decoding steps the row ran in the batch (padding after its stop included), and, when asked
    for, its cache over the row and its tokens but the last (never fed back)."""

    tokens: list[int]
    logprobs: list[float]
    steps: int
    states: LayerStates | None = None


def warpers(sampling: dict[str, Any]) -> LogitsProcessorList:
    """`generate`'s warpers for `sampling` (`train.rollout.sampling_kwargs`), in its order; none when greedy."""
    if not sampling.get("do_sample"):
        return LogitsProcessorList()
    chain = LogitsProcessorList()
    if sampling.get("temperature", 1.0) != 1.0:
        chain.append(TemperatureLogitsWarper(sampling["temperature"]))
    if sampling.get("top_k"):
        chain.append(TopKLogitsWarper(sampling["top_k"]))
    if sampling.get("top_p", 1.0) < 1.0:
        chain.append(TopPLogitsWarper(sampling["top_p"]))
    return chain


def decode_rows(
    model,
    ids: torch.Tensor,
    attention: torch.Tensor,
    cache,
    max_new_tokens: int,
    stop: int,
    sampling: dict[str, Any],
    keep_states: bool = False,
    compact_below: float = 0.75,
) -> list[Decoded]:
    """Sample up to `max_new_tokens` for each row of the left-padded `ids`, stopping a row at `stop`. `cache` holds
    the rows' first positions (at most all but the last column); what it lacks is run first. A row that stopped
    leaves the batch when the live rows fall to `compact_below` of the rows in it."""
    if not 0 < compact_below <= 1:
        raise ValueError(f"compact_below must be in (0, 1], not {compact_below}")
    chain, greedy = warpers(sampling), not sampling.get("do_sample")
    rows, width = ids.shape
    past = cache.get_seq_length()
    if past >= width:
        raise ValueError(f"the cache holds {past} positions; the rows have {width}, one must be left to run")
    tokens: list[list[int]] = [[] for _ in range(rows)]
    logprobs: list[list[float]] = [[] for _ in range(rows)]
    ends = [0] * rows  # each row's cache end once it stopped
    steps = [0] * rows  # the decoding steps each row ran in the batch
    states: list[LayerStates | None] = [None] * rows
    batch = list(range(rows))  # the original row of each row in the batch
    positions = (attention.long().cumsum(-1) - 1).clamp(min=0)
    step_ids, step_positions = ids[:, past:], positions[:, past:]
    for step in range(max_new_tokens):
        logits = (
            model(
                input_ids=step_ids, attention_mask=attention, position_ids=step_positions, cache=cache, use_cache=True
            )
            .logits[:, -1, :]
            .float()
        )
        scores = chain(ids, logits)  # these warpers read no earlier tokens
        chosen = scores.argmax(-1) if greedy else torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1)[:, 0]
        chosen_logprobs = torch.log_softmax(scores, dim=-1).gather(-1, chosen[:, None])[:, 0]
        live = []
        for slot, (row, token, logprob) in enumerate(
            zip(batch, chosen.tolist(), chosen_logprobs.tolist(), strict=True)
        ):
            steps[row] += 1
            if ends[row]:
                continue  # stopped, waiting for the batch to let it go
            tokens[row].append(token)
            logprobs[row].append(logprob)
            if token == stop or step + 1 == max_new_tokens:
                ends[row] = width + step  # the cache's length: the row and its tokens but the last
                if keep_states:
                    states[row] = row_states(cache, slot, width - int(attention[slot].sum()) + step, ends[row])
            else:
                live.append(slot)
        if not live:
            break
        if len(live) <= compact_below * len(batch) and len(live) < len(batch):
            index = torch.tensor(live, device=ids.device)
            cache.batch_select_indices(index)
            batch, attention, step_positions = [batch[s] for s in live], attention[index], step_positions[index]
            chosen = chosen[index]
        step_ids, step_positions = chosen[:, None], step_positions[:, -1:] + 1
        attention = torch.cat([attention, attention.new_ones((len(batch), 1))], dim=1)
    return [Decoded(tokens[r], logprobs[r], steps[r], states[r]) for r in range(rows)]


def row_states(cache, slot: int, start: int, end: int) -> LayerStates:
    """A copy of one batch row's cache between `start` and `end`."""
    return [
        (layer.keys[slot : slot + 1, :, start:end].clone(), layer.values[slot : slot + 1, :, start:end].clone())
        for layer in cache.layers
    ]
