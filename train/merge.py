"""A GRPO checkpoint made into a policy folder, so the tools that read a warm start read it too.

A LoRA run's `grpo/checkpoint-N/` holds only the adapter over the run's base (what TRL saves), while evaluation,
`benchmarks/plan_odds.py`, `benchmarks/forced_branch.py` and `pack-master` read merged weights with the policy's
action format: this rebuilds them, as a warm start brought as its adapter alone is rebuilt on resume.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from train.config import run_config

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def checkpoint_step(checkpoint: Path) -> int:
    """N of `checkpoint-N`; anything else is not a trainer checkpoint."""
    prefix, _, step = checkpoint.name.rpartition("-")
    if prefix != "checkpoint" or not step.isdigit():
        raise ValueError(f"{checkpoint} is not a trainer checkpoint folder (checkpoint-N)")
    return int(step)


def merge_checkpoint(checkpoint: Path, folder: Path | None = None) -> Path:
    """Write `checkpoint`'s adapter, tokenizer and merged weights into `folder` (default `RUN/merged-N`, beside
    `warmstart/` and `final/`); returns it. Refuses a checkpoint a crash left half written and a folder in use."""
    from agentcvr.masters import ADAPTER_FOLDER
    from train.pipeline import Run

    checkpoint = Path(checkpoint)
    step = checkpoint_step(checkpoint)
    run = checkpoint.parent.parent  # RUN/grpo/checkpoint-N
    cfg = run_config(run)
    if not (checkpoint / "COMPLETE").exists():
        raise FileNotFoundError(f"{checkpoint} was not completely written (no COMPLETE marker): take an earlier one")
    missing = [name for name in ADAPTER_FILES if not (checkpoint / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{checkpoint} holds no LoRA adapter (missing {', '.join(missing)})")
    folder = Path(folder) if folder is not None else run / f"merged-{step}"
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty: remove it or choose another folder")
    adapter = folder / ADAPTER_FOLDER
    adapter.mkdir(parents=True, exist_ok=True)
    try:
        for name in ADAPTER_FILES:
            shutil.copy(checkpoint / name, adapter / name)
        for name in TOKENIZER_FILES:
            if (checkpoint / name).is_file():
                shutil.copy(checkpoint / name, folder / name)
        Run(cfg, run, resume=True).merge_adapter(folder)
    except BaseException:
        shutil.rmtree(folder)  # a half-merged folder would look like a policy; the checkpoint is untouched
        raise
    (folder / "train_config.yaml").write_text(yaml.safe_dump(cfg.model_dump(), sort_keys=False))
    (folder / "DONE").write_text(f"merged from {checkpoint}\n")
    return folder
