"""Watching a GRPO run: metrics JSONL (resume-aware), a rich progress bar with the live reward, a wall-clock limit,
and PNG curves (reward total/correctness/format, turns and tool calls per episode, KL, entropy).

TensorBoard comes from the Trainer itself (`report_to=["tensorboard"]`, `logging_dir`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from transformers import TrainerCallback

# What the curves show: (panel title, [metric keys]); keys as TRL logs them plus ours (`episode/*`).
PANELS = [
    (
        "reward",
        [
            "reward",
            "rewards/correctness/mean",
            "rewards/format/mean",
            "rewards/turn_cost/mean",
            "plan/forced_reward",
            "plan/free_reward",
        ],
    ),
    ("turns per episode", ["episode/turns"]),
    ("tool calls per episode", ["episode/tool_calls", "episode/tool_errors"]),
    ("KL to warm start", ["kl"]),
    ("entropy (nats/token)", ["entropy"]),
    ("throughput", ["throughput/completions_per_second"]),
    ("groups whose rewards differ (GRPO's signal)", ["groups/with_spread", "plan/reached"]),
    (
        "P(the teacher's stop after its looks) (grpo.stop_anchor)",
        ["anchor/stop_p", "anchor/other_stop_p", "anchor/other_below_floor"],
    ),
    ("evidence reward", ["rewards/evidence/mean"]),
]


def read_metrics(path: Path) -> list[dict]:
    """Logged rows; a torn last line (killed mid-write) is skipped."""
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def truncate_metrics(path: Path, last_step: int) -> int:
    """Keep rows up to `last_step` (the checkpoint a resumed run restarts from); returns how many were dropped."""
    rows = read_metrics(path)
    kept = [row for row in rows if row.get("step", 0) <= last_step]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(row) + "\n" for row in kept))
    os.replace(tmp, path)
    return len(rows) - len(kept)


def rollouts_per_step(args) -> int:
    """Completions behind one optimizer step: TRL's `step_time` sums the step's micro-batches."""
    return args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size


class MetricsLogger(TrainerCallback):
    """Appends every training log (with its step and wall time) to a JSONL file, flushed and fsynced."""

    def __init__(self, path: Path):
        self.path = path

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or "train_runtime" in logs:  # the final summary is not a step
            return
        row = {"step": state.global_step, "time": time.time(), **logs}
        step_time = logs.get("step_time")
        # Only a step that sampled made completions: with grpo.num_iterations > 1 the steps between reuse its batch.
        if step_time and "reward" in logs:
            row["throughput/completions_per_second"] = rollouts_per_step(args) / step_time
            if "timing/simulator_seconds" in logs:
                row["throughput/simulator_share"] = logs["timing/simulator_seconds"] / step_time
        with self.path.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


class RichProgress(TrainerCallback):
    """A rich progress bar over optimizer steps showing the latest reward, correctness, tool calls and speed."""

    def __init__(self, console=None):
        self.console = console
        self.progress = None

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("GRPO"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=self.console,
            transient=False,
        )
        self.progress.start()
        self.task = self.progress.add_task("", total=state.max_steps, completed=state.global_step)

    def on_step_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.progress is None or not logs or "reward" not in logs:
            return
        speed = rollouts_per_step(args) / logs["step_time"] if logs.get("step_time") else 0.0
        share = logs.get("timing/simulator_seconds", 0.0) / logs["step_time"] if logs.get("step_time") else 0.0
        self.progress.update(
            self.task,
            description=(
                f"reward {logs['reward']:.3f} correct {logs.get('rewards/correctness/mean', 0):.3f} "
                f"calls {logs.get('episode/tool_calls', 0):.2f} kl {logs.get('kl', 0):.4f} "
                f"{speed:.1f} compl/s sim {share:.1%}"
            ),
        )

    def on_train_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


class WallClockLimit(TrainerCallback):
    """Stops training (after saving) once `seconds` have passed since this process started training."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.started = None
        self.stopped_early = False

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self.seconds is not None and time.perf_counter() - self.started > self.seconds:
            control.should_training_stop = True
            control.should_save = True
            self.stopped_early = True


class CompletionMarker(TrainerCallback):
    """Notes in each checkpoint that it was fully written (on_save runs after model, optimizer and state)."""

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if folder.is_dir():
            (folder / "COMPLETE").write_text(str(state.global_step))


def last_complete_checkpoint(folder: Path) -> Path | None:
    """The newest checkpoint whose trainer state is readable (a kill -9 mid-save leaves a torn one, skipped)."""
    candidates = []
    for path in folder.glob("checkpoint-*"):
        try:
            step = int(path.name.rsplit("-", 1)[1])
            state = json.loads((path / "trainer_state.json").read_text())
        except (ValueError, OSError):
            continue
        if state.get("global_step") == step:
            candidates.append((step, path))
    return max(candidates)[1] if candidates else None


def plot_curves(metrics: list[dict], path: Path, title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(15, 10))
    for ax, (name, keys) in zip(axes.flat, PANELS, strict=True):
        for key in keys:
            points = [(row["step"], row[key]) for row in metrics if key in row]
            if points:
                steps, values = zip(*points, strict=True)
                ax.plot(steps, values, label=key, alpha=0.35 if len(points) > 10 else 1.0)
                if len(points) > 10:  # a moving average over 8 logs for the trend
                    window = 8
                    smooth = [
                        sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
                        for i in range(len(values))
                    ]
                    ax.plot(steps, smooth, color=ax.lines[-1].get_color())
        ax.set_title(name)
        ax.set_xlabel("step")
        if len(keys) > 1:
            ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
