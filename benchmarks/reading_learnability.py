"""Can the cpu-tiny policy learn to *read* the evidence, given unlimited reading practice on one core?

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reading_learnability.py --tasks PEA,MSR --minutes 30

Each observation comes under a header naming its video and how it was taken (`agentcvr.reading.evidence_text`), so
which-video questions can be answered. For a pretrained reader (MiniLM fine-tuned to score each option), see
`agentcvr train-reader`, which prints and plots the same kind of curve.

train-sim's GRPO can only reward better looking once the policy reads what it saw (the reading probe of
`agentcvr train-sim` measures that; it sits at chance). This benchmark isolates the reading step: the expert makes
the calls, and a from-scratch model of the preset's shape is trained on nothing but "question + options + the
expert's observations -> answer letter" (cross-entropy on the letter, optionally plus language-model loss on every
token with `--lm-loss`). Every `--eval-every` steps it prints held-out accuracy (scripts of another seed) beside the
baseline measured on the same held-out set: always answering the training set's most frequent letter.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections import Counter

os.environ.setdefault("OMP_NUM_THREADS", "1")

from agentcvr.components import make_policy, make_training_perception
from agentcvr.interfaces import Limits
from agentcvr.policies.teaching import looks
from agentcvr.reading import evidence_text, seen_from
from scripts_gen.generate import generate_one
from train.config import load_config
from train.tiny_model import build_tiny_model, parameter_count
from train.tokenizer import train_tokenizer
from train.trajectories import scripts_by_id, teacher_conversations


def reading_examples(cfg, tasks: list[str], count: int, seed: int) -> list[tuple[str, str, str]]:
    """(task, question + options + the expert's observations, the expert's answer letter) per answered episode."""
    limits = Limits(max_turns=cfg.agent.max_turns, max_observation_chars=cfg.agent.max_observation_chars)
    examples = []
    for task in tasks:
        scripts = [generate_one(task, i, seed) for i in range(count)]
        table = scripts_by_id(scripts)
        conversations, results = teacher_conversations(
            scripts, make_policy("expert", table), make_training_perception(cfg, table), limits
        )
        answered = {r.episode_id for r in results if r.answer is not None}
        for script, messages in zip((s for s in scripts if s.id in answered), conversations, strict=True):
            seen = evidence_text([seen_from(look.action, look.observation) for look in looks(messages, script.episode)])
            answer = next(
                call["function"]["arguments"]["answer"]
                for m in messages
                for call in m.get("tool_calls") or []
                if call["function"]["name"] == "answer"
            )
            examples.append((task, "\n".join([messages[1]["content"], seen, "Answer:"]), answer))
    return examples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="PEA,MSR", help="comma-separated task kinds")
    parser.add_argument("--train", type=int, default=2000, help="training episodes per task kind")
    parser.add_argument("--heldout", type=int, default=60, help="held-out episodes per task kind (seed 10000)")
    parser.add_argument("--minutes", type=float, default=7.0, help="training wall-clock budget")
    parser.add_argument("--preset", default="cpu-tiny", help="model shape and agent limits come from this preset")
    parser.add_argument("--lm-loss", action="store_true", help="add language-model loss on every token")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--eval-every", type=int, default=100)
    args = parser.parse_args()

    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    cfg = load_config(args.preset)
    tasks = args.tasks.split(",")
    started = time.perf_counter()
    train = reading_examples(cfg, tasks, args.train, cfg.data.train_seed)
    heldout = reading_examples(cfg, tasks, args.heldout, cfg.data.heldout_seed)
    tokenizer = train_tokenizer([text for _, text, _ in train], vocab_size=cfg.model.vocab_size)
    letters = sorted({letter for *_, letter in train + heldout})
    letter_ids = torch.tensor([tokenizer.convert_tokens_to_ids(tokenizer.tokenize(" " + x))[-1] for x in letters])
    encoded = [(task, tokenizer.encode(text), letters.index(letter)) for task, text, letter in train]
    held = [(task, tokenizer.encode(text), letters.index(letter)) for task, text, letter in heldout]
    model = build_tiny_model(cfg.model, tokenizer, seed=0)
    print(
        f"{len(train)} training / {len(heldout)} held-out examples of {tasks}, "
        f"{sum(len(ids) for _, ids, _ in encoded) / len(encoded):.0f} tokens each, "
        f"model {parameter_count(model) / 1e6:.2f} M parameters, built in {time.perf_counter() - started:.0f} s",
        flush=True,
    )

    majority = Counter(label for *_, label in encoded).most_common(1)[0][0]
    baseline = {t: _mean([label == majority for task, _, label in held if task == t]) for t in tasks}
    print("baseline (most frequent letter) " + "  ".join(f"{t} {v:.0%}" for t, v in baseline.items()), flush=True)

    def letter_logits(batch):
        width = max(len(ids) for _, ids, _ in batch)
        ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        attention = torch.zeros_like(ids)
        for row, (_, tokens, _) in enumerate(batch):  # left padding: the last position predicts the letter
            ids[row, width - len(tokens) :] = torch.tensor(tokens)
            attention[row, width - len(tokens) :] = 1
        logits = model(input_ids=ids, attention_mask=attention).logits
        lm = None
        if args.lm_loss:
            losses = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="none")
            mask = attention[:, 1:].flatten().float()
            lm = (losses * mask).sum() / mask.sum()
        return logits[:, -1, letter_ids], lm

    def accuracy() -> dict[str, float]:
        model.eval()
        hits: dict[str, list[bool]] = {t: [] for t in tasks}
        with torch.no_grad():
            for i in range(0, len(held), args.batch_size):
                batch = held[i : i + args.batch_size]
                predicted = letter_logits(batch)[0].argmax(-1).tolist()
                for (task, _, label), guess in zip(batch, predicted, strict=True):
                    hits[task].append(guess == label)
        model.train()
        return {t: _mean(v) for t, v in hits.items()}

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    rng, step, losses, clock = random.Random(0), 0, [], time.perf_counter()
    while time.perf_counter() - clock < args.minutes * 60:
        rng.shuffle(encoded)
        for i in range(0, len(encoded) - args.batch_size + 1, args.batch_size):
            batch = encoded[i : i + args.batch_size]
            logits, lm = letter_logits(batch)
            loss = F.cross_entropy(logits, torch.tensor([label for *_, label in batch]))
            optimizer.zero_grad()
            (loss if lm is None else loss + lm).backward()
            optimizer.step()
            step, losses = step + 1, losses + [loss.item()]
            if step % args.eval_every == 0:
                held_out = accuracy()
                print(
                    f"step {step:5d}  {time.perf_counter() - clock:5.0f} s  letter loss "
                    f"{_mean(losses[-args.eval_every :]):.3f} (chance {torch.log(torch.tensor(len(letters))):.3f})  "
                    + "  ".join(f"{t} {held_out[t]:.0%} ({held_out[t] / max(baseline[t], 1e-9):.2f}x)" for t in tasks),
                    flush=True,
                )
            if time.perf_counter() - clock > args.minutes * 60:
                break
    print(f"final after {step} steps ({step * args.batch_size} examples): " + str(accuracy()))
    return 0


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


if __name__ == "__main__":
    raise SystemExit(main())
