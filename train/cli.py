"""The `agentcvr train-sim` command (registered by agentcvr.cli); heavy imports happen inside the function.

agentcvr train-sim --preset cpu-tiny
agentcvr train-sim --preset cpu-tiny --out runs/tiny --resume
agentcvr train-sim --preset gpu-qwen3-8b -o grpo.max_steps=200 -o simulator.url=http://sim:8000/v1
agentcvr train-sim --preset cpu-tiny --method tas --method care -o methods.tas.variant=linear-decay
"""

from __future__ import annotations

from pathlib import Path

import typer


def train_sim(
    preset: str = typer.Option("cpu-tiny", help="A preset in train/presets/ (cpu-tiny, gpu-qwen3-4b, ...) or a YAML."),
    overrides: list[str] = typer.Option(
        [], "--override", "-o", help="key=value on the preset, e.g. -o grpo.max_steps=20 -o data.tasks=[PI,MOC]"
    ),
    methods: list[str] = typer.Option(
        [],
        "--method",
        "-m",
        help="Switch on a companion paper's method (repeatable): tas, replay (AVATAR), care (GRPO-CARE), jigsaw "
        "(OmniJigsaw pretraining). Same as -o methods.<name>.enabled=true; tune with -o methods.tas.lam=0.5, "
        "-o methods.replay.hints=template etc.",
    ),
    resume: bool = typer.Option(False, help="Continue the run in --out from its last complete stage/checkpoint."),
    out: Path = typer.Option(None, help="Run folder (default runs/<preset>)."),
) -> None:
    """Warm-start a policy on expert trajectories, then train it with multi-turn GRPO in the script simulator."""
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models on 2 shared cores: threads only add contention
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch

    from train.config import load_config
    from train.pipeline import run_train_sim

    if os.environ["OMP_NUM_THREADS"] == "1":
        torch.set_num_threads(1)
    known = ("tas", "replay", "care", "jigsaw")
    for name in methods:
        if name not in known:
            raise typer.BadParameter(f"unknown method {name!r}: choose from {', '.join(known)}", param_hint="--method")
    cfg = load_config(preset, [*overrides, *(f"methods.{name}.enabled=true" for name in methods)])
    run_train_sim(cfg, out or Path("runs") / cfg.name, resume=resume)
