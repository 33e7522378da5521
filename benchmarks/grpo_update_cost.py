r"""What one GRPO micro-batch's forward and backward cost on a real rollout, three ways: as the CPU recipe ran until
session 42 (TRL's fused head over every completion position, as it runs away from Triton, and gradient checkpointing
with input gradients on, which GRPOTrainer sets on a peft model, so the backward also runs through the frozen layers
below the adapter); with the output layer at the positions the loss reads alone (`train.grpo.scored_logps`); and that
without checkpointing.

A search's rollout is thousands of tool-output tokens around a few sampled ones, and with
`grpo.trained_tokens=decisions` the loss reads one token a turn. Each row here is the search teacher's conversation on
a script as the warm start read it (`train.sft.encode`: a GRPO rollout's length), the prompt up to its first
assistant turn, the read tokens each assistant turn's first; the ways run on the same rows, one after the other, and
must agree on the loss. Figures are seconds a pass and the ratio against the first way, measured in the same run.

    for t in MOC MSR CCQA; do agentcvr gen-scripts --task $t -n 2 --seed 48 --out /tmp/cost-$t.jsonl; done
    cat /tmp/cost-*.jsonl > /tmp/cost.jsonl
    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/grpo_update_cost.py --base runs/smol-v15/base \
        --adapter docs/search_warmstart/smol-v14-warmstart/adapter --scripts /tmp/cost.jsonl --rows 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentcvr.interfaces import Limits
from agentcvr.script import Script
from simulator.script_sim import ScriptSimulator
from train.forced_plan import TeacherConversations
from train.grpo import scored_logps
from train.sft import encode, render
from train.trajectories import for_template


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="a dequantized base (train-sim's RUN/base)")
    parser.add_argument("--adapter", type=Path, required=True, help="a LoRA adapter over it (a warm start's adapter/)")
    parser.add_argument("--scripts", type=Path, required=True, help="gen-scripts JSONL (kinds whose search looks)")
    parser.add_argument("--rows", type=int, default=4, help="rollouts measured")
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--temperature", type=float, default=0.5)
    args = parser.parse_args()
    for path in (args.base, args.adapter, args.scripts):
        if not path.exists():
            parser.error(f"{path} does not exist")

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.trainer.utils import add_fused_lm_head

    scripts = [Script.model_validate_json(line) for line in args.scripts.read_text().splitlines() if line.strip()]
    table = {s.id: s for s in scripts}
    limits = Limits(max_turns=args.max_turns)
    conversations = TeacherConversations(scripts, ScriptSimulator(table, sampling="frames"), limits, "json", 128)
    tokenizer = AutoTokenizer.from_pretrained(args.base)
    base = AutoModelForCausalLM.from_pretrained(args.base, dtype=torch.float32)
    add_fused_lm_head(base, temperature=args.temperature, outputs=("log_probs", "entropy"))  # as GRPOTrainer does
    model = PeftModel.from_pretrained(base, str(args.adapter), is_trainable=True)
    model.train()
    rows = []
    for key, search in conversations.search.items():
        # the conversation as the warm start read it; its assistant tokens are what a rollout samples
        ids, weights = encode(tokenizer, render(tokenizer, [for_template(search)], None)[0])
        decisions = [i for i, w in enumerate(weights) if w and not (i and weights[i - 1])]  # each turn's first token
        if len(decisions) > 2:  # the scan's turns and a look of the search's own
            rows.append((key, ids, decisions[0], decisions))
        if len(rows) == args.rows:
            break
    if not rows:
        parser.error(f"no script in {args.scripts} makes the search look")

    def checkpointing(on: bool) -> None:
        """Gradient checkpointing as GRPOTrainer sets it on a peft model (input gradients on, so the backward runs
        through the frozen layers below the adapter too), or off."""
        if on:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.enable_input_require_grads()
        else:
            model.gradient_checkpointing_disable()
            model.disable_input_require_grads()

    def pass_seconds(ids: list[int], prompt: int, read: list[int], scored: bool) -> tuple[float, float]:
        """Forward and backward of the GRPO-shaped loss (mean log-prob of the read tokens): seconds and loss."""
        input_ids = torch.tensor([ids])
        attention = torch.ones_like(input_ids)
        width = len(ids) - prompt
        mask = torch.zeros(1, width, dtype=torch.bool)
        mask[0, [i - prompt for i in read]] = True
        model.zero_grad()
        started = time.perf_counter()
        if scored:
            logps, _ = scored_logps(model, input_ids, attention, mask, args.temperature)
        else:
            labels = input_ids.clone()
            labels[:, :-width] = -100
            logps = model(input_ids=input_ids, attention_mask=attention, labels=labels, fused_lm_head=True).log_probs
            logps = logps[:, -width:]
        loss = -(logps * mask).sum() / mask.sum()
        loss.backward()
        return time.perf_counter() - started, float(loss)

    # (name, checkpointing, output layer at the read positions alone): the CPU recipe until session 42, then each change
    ways = [
        ("TRL, checkpointing", True, False),
        ("read positions", True, True),
        ("read, no checkpointing", False, True),
    ]
    out = Table(title=f"One micro-batch's forward and backward, seconds ({args.adapter})")
    for column in ("row", "tokens", "completion", "loss reads", *(name for name, _, _ in ways)):
        out.add_column(column, justify="left" if column == "row" else "right")
    ratios: dict[str, list[float]] = {name: [] for name, _, _ in ways[1:]}
    checkpointing(False)
    pass_seconds(*rows[0][1:], scored=True)  # warm the allocator once, so no way pays for it
    for key, ids, prompt, decisions in rows:
        seconds, losses = [], []
        for _, on, scored in ways:
            checkpointing(on)
            took, loss = pass_seconds(ids, prompt, decisions, scored)
            seconds.append(took)
            losses.append(loss)
        if max(losses) - min(losses) > 1e-3 * max(1.0, abs(losses[0])):
            raise SystemExit(f"{key}: the losses differ ({losses})")
        for (name, _, _), took in zip(ways[1:], seconds[1:], strict=True):
            ratios[name].append(seconds[0] / took)
        cells = [f"{seconds[0]:.1f}", *(f"{t:.1f} ({seconds[0] / t:.2f}x)" for t in seconds[1:])]
        out.add_row(key, str(len(ids)), str(len(ids) - prompt), str(len(decisions)), *cells)
    Console().print(out)
    for name, values in ratios.items():
        print(f"{name}: median speed-up {statistics.median(values):.2f}x over {len(values)} rollouts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
