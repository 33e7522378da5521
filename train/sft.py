"""Warm start: supervised fine-tuning on expert trajectories, trained until held-out loss stops improving.

Each conversation is rendered once with the chat template and the tools, then cut at the assistant turns. Pieces are
tokenized separately and concatenated, exactly as TRL assembles a rollout (prompt ids + sampled ids + tool-suffix
ids), so the warm start learns the token sequences GRPO will sample. Only assistant tokens (the tool calls, their
`<|im_end|>`) carry loss. Early stopping on a validation split (patience) decides convergence; the loss curve is
plotted beside the run.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from train.config import SFTConfig

ASSISTANT_OPEN = "<|im_start|>assistant\n"
ANSWER_CALLS = ('"name": "answer"', '"action": "answer"')  # the answer turn, in tool calls or the JSON protocol
TURN_END = "<|im_end|>"


def split_assistant_spans(text: str) -> list[tuple[str, bool]]:
    """Rendered conversation -> [(piece, is_assistant)]; assistant pieces run from the header to `<|im_end|>`.

    >>> split_assistant_spans("<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\nyo<|im_end|>\\n")
    [('<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n', False), ('yo<|im_end|>', True), ('\\n', False)]
    """
    pieces, position = [], 0
    while (start := text.find(ASSISTANT_OPEN, position)) != -1:
        start += len(ASSISTANT_OPEN)
        end = text.index(TURN_END, start) + len(TURN_END)
        pieces.append((text[position:start], False))
        pieces.append((text[start:end], True))
        position = end
    if position < len(text):
        pieces.append((text[position:], False))
    return [(piece, flag) for piece, flag in pieces if piece]


def encode(tokenizer: PreTrainedTokenizerBase, text: str, answer_weight: float = 1.0) -> tuple[list[int], list[float]]:
    """Token ids and loss weights of one rendered conversation: 0 off the assistant turns, 1 on them, and
    `answer_weight` on the turn that calls `answer` (one token decides the episode; dozens place the calls)."""
    ids, mask = [], []
    for piece, is_assistant in split_assistant_spans(text):
        piece_ids = tokenizer.encode(piece, add_special_tokens=False)
        weight = (answer_weight if any(call in piece for call in ANSWER_CALLS) else 1.0) if is_assistant else 0.0
        ids += piece_ids
        mask += [weight] * len(piece_ids)
    return ids, mask


def render(tokenizer: PreTrainedTokenizerBase, conversations: list[list[dict]], tools: list[dict] | None) -> list[str]:
    return [tokenizer.apply_chat_template(c, tools=tools, tokenize=False) for c in conversations]


@dataclass
class SFTResult:
    train_loss: list[tuple[int, float]] = field(default_factory=list)  # (step, loss) of each logged batch window
    val_loss: list[tuple[int, float]] = field(default_factory=list)  # (step, loss) after each epoch
    epochs: int = 0
    steps: int = 0
    seconds: float = 0.0
    best_val: float = math.inf
    stopped: str = ""
    examples: int = 0
    tokens: int = 0
    too_long: int = 0  # trajectories left out for passing `max_length` tokens

    def to_json(self) -> dict:
        return self.__dict__


def _batches(items: list, batch_size: int, rng: random.Random) -> list[list]:
    # Bucket by length (sort within shuffled chunks) so padding stays small, then shuffle the batches.
    order = items[:]
    rng.shuffle(order)
    chunk = batch_size * 16
    batches = []
    for i in range(0, len(order), chunk):
        block = sorted(order[i : i + chunk], key=lambda x: len(x[0]))
        batches += [block[j : j + batch_size] for j in range(0, len(block), batch_size)]
    rng.shuffle(batches)
    return batches


def _collate(batch: list[tuple[list[int], list[float]]], pad_id: int):
    """Right-padded ids, attention mask, labels (-100 where untrained) and per-token loss weights."""
    import torch

    width = max(len(ids) for ids, _ in batch)
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    weights = torch.zeros((len(batch), width))
    for row, (ids, mask) in enumerate(batch):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        attention[row, : len(ids)] = 1
        labels[row, : len(ids)] = torch.tensor([t if m else -100 for t, m in zip(ids, mask, strict=True)])
        weights[row, : len(ids)] = torch.tensor(mask, dtype=torch.float)
    return input_ids, attention, labels, weights


def assistant_loss(model, input_ids, attention, labels, weights=None, reduction: str = "mean"):
    """Next-token cross-entropy on the assistant tokens only (weighted when `weights` are given); the output layer
    runs only at those positions (most positions are prompt and tool output: this skips most of the vocabulary
    projection). Returns (loss, number of trained tokens)."""
    import torch.nn.functional as F

    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model  # under a peft LoRA or not
    hidden = causal_lm.base_model(input_ids=input_ids, attention_mask=attention).last_hidden_state
    targets = labels[:, 1:]
    keep = targets != -100
    logits = model.get_output_embeddings()(hidden[:, :-1][keep])
    losses = F.cross_entropy(logits.float(), targets[keep], reduction="none")
    w = weights[:, 1:][keep] if weights is not None else losses.new_ones(losses.shape)
    total = (losses * w).sum()
    return (total if reduction == "sum" else total / w.sum()), int(keep.sum())


def _evaluate(model, data, batch_size: int, pad_id: int) -> float:
    import torch

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(data), batch_size):
            input_ids, attention, labels, _ = _collate(data[i : i + batch_size], pad_id)
            loss, n = assistant_loss(model, input_ids, attention, labels, reduction="sum")  # unweighted: comparable
            total, count = total + float(loss), count + n
    model.train()
    return total / max(count, 1)


def lost_by_kind(encoded: list, kinds: list[str] | None, max_length: int) -> str:
    """`; NC 42 of 90, MOC 13 of 30`: per kind, its trajectories over `max_length` of all it had (empty without
    kinds). Session 25's search-teacher warm start lost every NC search this way, and so sampled NC's search never."""
    if kinds is None:
        return ""
    if len(kinds) != len(encoded):
        raise ValueError(f"{len(kinds)} kinds for {len(encoded)} trajectories")
    totals, lost = (
        Counter(kinds),
        Counter(k for k, (ids, _) in zip(kinds, encoded, strict=True) if len(ids) > max_length),
    )
    return "; " + ", ".join(f"{kind} {lost[kind]} of {totals[kind]}" for kind in sorted(lost))


def train_sft(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    texts: list[str],
    cfg: SFTConfig,
    seed: int = 0,
    log=print,
    checkpoint: Path | None = None,
    kinds: list[str] | None = None,
) -> SFTResult:
    """Train in place until validation loss stops improving (or `max_epochs` / `max_seconds`); keeps the best
    weights. With `checkpoint`, everything needed to go on (weights, optimizer, schedule, sampling state, the best
    weights so far) is written there after each epoch and every `checkpoint_minutes` within one, and a run that finds
    the file goes on from the batch after it, in the same batch order: an interrupted warm start (one epoch of a 135 M
    model is 80 minutes on 2 cores) loses at most those minutes. `kinds` (each text's task kind) lets the line about
    trajectories left out for their length say which kinds lost them."""
    import copy

    import torch

    rng = random.Random(seed)
    torch.manual_seed(seed)
    encoded = [encode(tokenizer, text, cfg.answer_weight) for text in texts]
    fitting = [item for item in encoded if len(item[0]) <= cfg.max_length]
    too_long = len(encoded) - len(fitting)
    if too_long:  # the longest plan is lost first (NC's, the search's): say so, or the warm start goes without it
        longest = max(len(ids) for ids, _ in encoded)
        log(
            f"warm start: left out {too_long} of {len(encoded)} trajectories over sft.max_length={cfg.max_length} "
            f"tokens (longest {longest}{lost_by_kind(encoded, kinds, cfg.max_length)}); raise sft.max_length and "
            "model.max_position_embeddings to keep them"
        )
    if not fitting:
        raise ValueError(f"every trajectory passes sft.max_length={cfg.max_length} tokens: raise it")
    encoded = fitting
    rng.shuffle(encoded)
    n_val = max(1, int(len(encoded) * cfg.val_fraction))
    val, train = encoded[:n_val], encoded[n_val:]
    result = SFTResult(examples=len(train), tokens=sum(len(ids) for ids, _ in train), too_long=too_long)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(train) / cfg.batch_size)
    total_steps = steps_per_epoch * cfg.max_epochs

    def lr_at(step: int) -> float:  # linear warmup, cosine decay over the epoch budget
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        progress = (step - cfg.warmup_steps) / max(1, total_steps - cfg.warmup_steps)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)
    started = time.perf_counter()
    best_state, bad_epochs, step, first_epoch = None, 0, 0, 1
    done = 0  # batches of `first_epoch` already trained (a checkpoint written within it)
    if checkpoint is not None and checkpoint.exists():
        saved = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        rng.setstate(saved["rng"])
        torch.set_rng_state(saved["torch_rng"])
        best_state, bad_epochs, step = saved["best_state"], saved["bad_epochs"], saved["step"]
        result = SFTResult(**saved["result"])
        started -= saved.get("seconds", result.seconds)
        first_epoch, done = result.epochs + 1, saved.get("batches_done", 0)
        within = f", {done} batches into epoch {first_epoch}" if done else ""
        log(
            f"sft: resuming after epoch {result.epochs}{within} ({step} steps, best validation loss "
            f"{result.best_val:.4f})"
        )
    else:
        result.val_loss.append((0, _evaluate(model, val, cfg.batch_size, tokenizer.pad_token_id)))

    def save(batches_done: int = 0, epoch_rng: object = None) -> None:
        """Everything needed to go on; within an epoch, also the sampling state its batch order was drawn from."""
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": epoch_rng if batches_done else rng.getstate(),
            "torch_rng": torch.get_rng_state(),
            "best_state": best_state,
            "bad_epochs": bad_epochs,
            "step": step,
            "result": dict(result.__dict__),
            "batches_done": batches_done,
            "seconds": time.perf_counter() - started,
        }
        partial = checkpoint.with_suffix(".partial")
        torch.save(state, partial)
        partial.replace(checkpoint)  # a crash mid-write leaves the previous checkpoint whole

    model.train()
    for epoch in range(first_epoch, cfg.max_epochs + 1):
        if result.stopped:  # a checkpoint written after the stopping epoch
            break
        window = []
        epoch_rng = rng.getstate()  # the batch order below is drawn from this: a resume within the epoch redraws it
        saved_at = time.perf_counter()
        for index, batch in enumerate(_batches(train, cfg.batch_size, rng)):
            if index < done:  # trained before the interruption
                continue
            input_ids, attention, labels, weights = _collate(batch, tokenizer.pad_token_id)
            loss, _ = assistant_loss(model, input_ids, attention, labels, weights)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            window.append(loss.item())
            if len(window) == 10:  # said too: an epoch of a 135 M model on one core is twenty silent minutes
                mean = sum(window) / len(window)
                result.train_loss.append((step, mean))
                elapsed = time.perf_counter() - started
                log(f"sft step {step}/{total_steps} (epoch {epoch}): train loss {mean:.4f}, {elapsed:.0f} s")
                window = []
            minutes = cfg.checkpoint_minutes
            if checkpoint is not None and minutes is not None and time.perf_counter() - saved_at >= 60 * minutes:
                save(index + 1, epoch_rng)
                saved_at = time.perf_counter()
        done = 0
        val_loss = _evaluate(model, val, cfg.batch_size, tokenizer.pad_token_id)
        result.val_loss.append((step, val_loss))
        result.epochs, result.steps = epoch, step
        elapsed = time.perf_counter() - started
        log(f"sft epoch {epoch}: val loss {val_loss:.4f} (best {result.best_val:.4f}), {step} steps, {elapsed:.0f} s")
        if val_loss < result.best_val * (1 - cfg.min_delta):
            result.best_val, bad_epochs = val_loss, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if val_loss < result.best_val:
                result.best_val, best_state = val_loss, copy.deepcopy(model.state_dict())
        if bad_epochs >= cfg.patience:
            result.stopped = f"converged: no {cfg.min_delta:.1%} validation gain for {cfg.patience} epochs"
        elif cfg.max_seconds is not None and elapsed > cfg.max_seconds:
            result.stopped = f"time cap {cfg.max_seconds:.0f} s"
        if epoch == cfg.max_epochs and not result.stopped:
            result.stopped = f"max_epochs {cfg.max_epochs}"
        if checkpoint is not None:
            result.seconds = elapsed
            save()
        if result.stopped:
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    result.seconds = time.perf_counter() - started
    model.eval()
    return result


def plot_sft(result: SFTResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    if result.train_loss:
        ax.plot(*zip(*result.train_loss, strict=True), label="train (10-batch mean)", alpha=0.7)
    ax.plot(*zip(*result.val_loss, strict=True), "o-", label="validation (per epoch)")
    ax.set_yscale("log")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss on assistant tokens")
    ax.set_title(f"warm-start SFT: {result.stopped}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def save_result(result: SFTResult, path: Path) -> None:
    path.write_text(json.dumps(result.to_json(), indent=1))
