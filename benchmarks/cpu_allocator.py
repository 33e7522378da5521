"""Does the C allocator slow CPU GRPO? One scoring pass and one update of the LoRA policy over a long rollout, per
allocator, as ratios against glibc's defaults measured in the same run.

Session 30's CPU GRPO batch spent half its CPU time in the kernel (`top`: 50 % sy) and session 31 counted 90,000
minor page faults a second during an update: glibc serves every allocation above its mmap threshold (128 KiB at
start, raised as blocks are freed, at most 32 MiB) with a mapping of its own and returns it on free, so a forward pass
over 5,000 tokens maps, zero-fills and unmaps its activations again each layer. Each mode runs in a fresh process:

- `glibc`: the defaults (the baseline);
- `glibc-kept`: `mallopt` keeps freed memory in the heap (mmap threshold 32 MiB, trim threshold and top pad 1 GiB),
  what a process can set for itself after it starts;
- `jemalloc`: `LD_PRELOAD` of the system's libjemalloc (Debian `libjemalloc2`), where it is installed.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/cpu_allocator.py --tokens 5000

The work is what TRL does per rollout with `grpo.beta=0`: a no-grad pass over prompt and completion (the old
log-probs) and a pass with gradient checkpointing plus its backward (the update), on SmolLM2-135M with the gpu-looker
preset's LoRA (dequantized from the registry GGUF into `--base` once). Run it with nothing else on the cores.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentcvr.memory import M_MMAP_THRESHOLD, M_TOP_PAD, M_TRIM_THRESHOLD, mallopt

KEPT = {M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 1 << 30, M_TOP_PAD: 1 << 30}
JEMALLOC = "/usr/lib/*-linux-gnu/libjemalloc.so.2"


def keep_freed_memory() -> bool:
    """glibc's `KEPT` settings for this process; False where the C library is not glibc."""
    return all(mallopt(parameter, value) for parameter, value in KEPT.items())


def measure(base: Path, tokens: int, repeats: int) -> dict:
    """Seconds of the scoring pass and of the update (forward with checkpointing + backward), the best of `repeats`,
    with the process's kernel share and minor faults over all of them."""
    import torch

    from train.config import load_config
    from train.tiny_model import load_policy_model, with_lora

    cfg = load_config("gpu-looker").model
    model = with_lora(load_policy_model(cfg, str(base)), cfg)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ids = torch.randint(0, model.config.vocab_size, (1, tokens), generator=torch.Generator().manual_seed(0))
    scoring, update = [], []
    before, began = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for _ in range(repeats):
        started = time.perf_counter()
        with torch.no_grad():
            model.eval()
            model(ids).logits.float().log_softmax(-1)
        scoring.append(time.perf_counter() - started)
        started = time.perf_counter()
        model.train()
        loss = model(ids).logits.float().log_softmax(-1).mean()
        loss.backward()
        model.zero_grad(set_to_none=True)
        update.append(time.perf_counter() - started)
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - began
    system, user = after.ru_stime - before.ru_stime, after.ru_utime - before.ru_utime
    return {
        "scoring": min(scoring),
        "update": min(update),
        "kernel_share": system / (system + user),
        "faults_per_second": (after.ru_minflt - before.ru_minflt) / wall,
    }


def run_mode(mode: str, args: argparse.Namespace) -> dict | None:
    """`measure` in a fresh process under `mode`'s allocator (None: that allocator is not installed)."""
    env = dict(os.environ)
    if mode == "jemalloc":
        found = sorted(glob.glob(JEMALLOC))
        if not found:
            return None
        env["LD_PRELOAD"] = found[0]
    command = [sys.executable, __file__, "--child", mode, "--base", str(args.base), "--tokens", str(args.tokens)]
    command += ["--repeats", str(args.repeats)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, default=Path("runs/bench-base"), help="SmolLM2-135M folder (made once)")
    parser.add_argument("--tokens", type=int, default=5000, help="rollout length (prompt and completion)")
    parser.add_argument("--repeats", type=int, default=2, help="passes per mode (the best is kept)")
    parser.add_argument("--mode", action="append", choices=["glibc", "glibc-kept", "jemalloc"], help="default: all")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tokens < 16 or args.repeats < 1:
        parser.error("--tokens must be at least 16 and --repeats at least 1")

    if args.child:
        if args.child == "glibc-kept" and not keep_freed_memory():
            raise SystemExit("glibc-kept: this C library has no mallopt")
        print(json.dumps(measure(args.base, args.tokens, args.repeats)))
        return 0

    from train.config import load_config
    from train.tiny_model import pretrained_source

    pretrained_source(load_config("gpu-looker").model, args.base)  # dequantize the registry GGUF once
    results = {}
    for mode in args.mode or ["glibc", "glibc-kept", "jemalloc"]:
        Console().print(f"{mode} ...")
        results[mode] = run_mode(mode, args)
    baseline = results.get("glibc")
    table = Table(title=f"One rollout of {args.tokens} tokens, SmolLM2-135M + LoRA, best of {args.repeats}")
    for column in ("allocator", "scoring s", "update s", "update vs glibc", "kernel share", "minor faults/s"):
        table.add_column(column, justify="left" if column == "allocator" else "right")
    for mode, result in results.items():
        if result is None:
            table.add_row(mode, "not installed", "", "", "", "")
            continue
        ratio = f"{baseline['update'] / result['update']:.2f}x" if baseline else "-"
        table.add_row(
            mode,
            f"{result['scoring']:.1f}",
            f"{result['update']:.1f}",
            ratio,
            f"{100 * result['kernel_share']:.0f} %",
            f"{result['faults_per_second']:,.0f}",
        )
    Console().print(table)
    if baseline:
        totals = {mode: r["scoring"] + r["update"] for mode, r in results.items() if r}
        ratios = ", ".join(f"{mode} {totals['glibc'] / total:.2f}x" for mode, total in totals.items())
        Console().print(f"scoring + update, speed against glibc's: {ratios}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
