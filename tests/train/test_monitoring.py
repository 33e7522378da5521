"""Resume bookkeeping: torn checkpoints are skipped, metrics are cut back to the checkpoint's step."""

from __future__ import annotations

import json

from train.monitoring import last_complete_checkpoint, read_metrics, truncate_metrics


def test_last_complete_checkpoint_skips_a_torn_one(tmp_path):
    for step in (5, 10):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (tmp_path / "checkpoint-15").mkdir()  # killed mid-save: no trainer state yet
    (tmp_path / "checkpoint-20").mkdir()
    (tmp_path / "checkpoint-20" / "trainer_state.json").write_text('{"global_st')  # torn write
    assert last_complete_checkpoint(tmp_path).name == "checkpoint-10"
    assert last_complete_checkpoint(tmp_path / "checkpoint-15") is None


def test_truncate_metrics_keeps_rows_up_to_the_step_and_skips_torn_lines(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "reward": s / 10}) + "\n" for s in range(1, 8)) + '{"step": 8, "re')
    assert truncate_metrics(path, 5) == 2  # steps 6 and 7 dropped (the torn line is not a row)
    assert [row["step"] for row in read_metrics(path)] == [1, 2, 3, 4, 5]


def test_throughput_counts_only_the_steps_that_sampled(tmp_path):
    """With grpo.num_iterations=2 every other optimizer step reuses the sampled batch: it adds time, no completions
    (session 25's H200 run logged 11.6 completions/s where 1.5 were sampled)."""
    from types import SimpleNamespace

    from train.monitoring import MetricsLogger
    from train.pipeline import _throughput

    path = tmp_path / "metrics.jsonl"
    logger = MetricsLogger(path)
    args = SimpleNamespace(per_device_train_batch_size=8, gradient_accumulation_steps=4, world_size=1)
    state = SimpleNamespace(is_world_process_zero=True, global_step=0)
    for step, logs in enumerate(
        [
            {"step_time": 15.0, "reward": 0.5, "timing/simulator_seconds": 3.0},  # sampled 32 completions
            {"step_time": 1.0},  # the same 32 again
            {"step_time": 15.0, "reward": 0.7, "timing/simulator_seconds": 3.0},
            {"step_time": 1.0},
        ],
        start=1,
    ):
        state.global_step = step
        logger.on_log(args, state, None, logs=logs)
    rows = read_metrics(path)
    assert [round(row.get("throughput/completions_per_second", 0), 3) for row in rows] == [2.133, 0, 2.133, 0]
    assert _throughput(rows) == {"completions_per_second": 2.0, "simulator_share": 0.1875, "step_seconds": 8.0}
