"""Method state saved beside each TRL checkpoint (`checkpoint-N/<name>.pt`) and read back when training resumes.

A method trainer adds `Sidecar(name, get_state, set_state)` as a callback: the replay buffer, CARE's EMA model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback


class Sidecar(TrainerCallback):
    """Writes `get_state()` after each checkpoint save; on a resumed start, feeds the saved state to `set_state`."""

    def __init__(self, name: str, get_state: Callable[[], Any], set_state: Callable[[Any], None]):
        self.name, self.get_state, self.set_state = name, get_state, set_state

    def path(self, args, state) -> Path:
        return Path(args.output_dir) / f"checkpoint-{state.global_step}" / f"{self.name}.pt"

    def on_save(self, args, state, control, **kwargs):
        path = self.path(args, state)
        if path.parent.is_dir():
            torch.save(self.get_state(), path)

    def on_train_begin(self, args, state, control, **kwargs):
        path = self.path(args, state)
        if state.global_step > 0 and path.exists():
            self.set_state(torch.load(path, weights_only=False))
