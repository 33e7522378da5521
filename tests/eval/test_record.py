"""The one record type (eval/record.py): lines written before it still read, and the one resume rule."""

from __future__ import annotations

import json

import pytest

from agentcvr.spec import Component, RunSpec, SpecMismatch
from agentcvr.trace import EpisodeResult
from eval.record import Record, RecordLog, read_latest, resume

SPEC = RunSpec(policy=Component(name="expert"))


def test_earlier_run_and_crossvid_lines_read_as_records(tmp_path):
    result = EpisodeResult(episode_id="NC-1", task="NC", answer="B").model_dump(mode="json")
    run_line = {"result": result, "official": 1.0, "strict": 1.0, "spec": None, "question": "abc"}
    crossvid_line = {"key": "NC/2", "task": "NC", "item_id": 2, "status": "ok", "output": "C", "trace": result}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(run_line) + "\n" + json.dumps(crossvid_line) + "\n")
    records, skipped = read_latest(path)
    assert not skipped
    assert (records["NC-1"].task, records["NC-1"].output, records["NC-1"].official) == ("NC", "B", 1.0)
    assert records["NC/2"].result is not None and records["NC/2"].trace["episode_id"] == "NC-1"


def test_resume_keeps_ok_records_reruns_failed_ones_and_refuses_another_spec(tmp_path):
    out = tmp_path / "run.jsonl"
    log = RecordLog(out)
    log.append(Record(key="a", task="NC", output="B", spec=SPEC))
    log.append(Record(key="b", task="NC", status="failed", error="timeout", spec=SPEC))
    log.close()
    assert set(resume(out, SPEC)) == {"a"}
    with pytest.raises(SpecMismatch, match='policy.name: "random" != "expert"'):
        resume(out, RunSpec(policy=Component(name="random")))


def test_resume_refuses_lines_of_another_kind_but_not_a_torn_last_line(tmp_path):
    out = tmp_path / "run.jsonl"
    log = RecordLog(out)
    log.append(Record(key="a", task="NC", output="B", spec=SPEC))
    log.close()
    with out.open("a") as handle:
        handle.write('{"key": "torn')  # a kill mid-write: that item runs again
    assert set(resume(out, SPEC)) == {"a"}
    out.write_text(out.read_text() + '\n{"id": "NC-000000", "own": "B", "choice": "A"}\n')  # an earlier format
    refused = r"holds lines that are not records .* 1 unexpected \(line 3: key: Field required\)"
    with pytest.raises(SpecMismatch, match=refused):
        resume(out, SPEC)
