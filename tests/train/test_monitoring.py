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
