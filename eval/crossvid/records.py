"""CrossVid's names for the one record type (`eval.record`): a `Prediction` is a `Record` keyed TASK/id."""

from __future__ import annotations

from pathlib import Path

from eval.record import JudgeRecord, Record, RecordLog, read_latest

Prediction = Record
PredictionLog = RecordLog

__all__ = ["JudgeRecord", "Prediction", "PredictionLog", "read_predictions"]


def read_predictions(path: Path) -> dict[str, Prediction]:
    """Records by key, the last line for a key winning (`eval.record.read_latest`)."""
    return read_latest(path)[0]
