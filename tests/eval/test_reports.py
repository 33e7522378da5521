"""Reports say what they left out: lines that are not records (unreadable, unexpected) are counted and named, records
the official rules drop are counted, and a run with nothing to score fails instead of printing an empty table."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentcvr.cli import app
from agentcvr.script import write_jsonl
from eval.crossvid.records import Prediction
from eval.crossvid.sample_tree import write_crossvid
from scripts_gen.generate import generate


def invoke(args: list[str]):
    return CliRunner().invoke(app, args, env={"COLUMNS": "400"})


def flat(text: str) -> str:
    """The output with line wrapping undone (the CrossVid console is 160 columns wide)."""
    return " ".join(text.split())


def test_run_report_names_the_lines_it_skipped(tmp_path):
    scripts, out = tmp_path / "scripts.jsonl", tmp_path / "expert.jsonl"
    write_jsonl(generate("NC", 2, seed=1), scripts)
    assert (
        invoke(["run", "--policy", "expert", "--scripts", str(scripts), "--no-traces", "--out", str(out)]).exit_code
        == 0
    )
    with out.open("a") as handle:
        handle.write('{"note": "an edit by hand"}\n')  # JSON, but not a result
        handle.write('{"result": {"episode_id": "torn')  # a crash mid-write
    result = invoke(["report", str(out)])
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert "skipped 2 of 4 lines: 1 unexpected (line 3: key: Field required)" in text
    assert "1 unreadable (line 4: not JSON" in text
    assert "│ NC │ expert │ 2 │ 100.0 │" in text


def test_run_report_fails_on_a_file_with_no_result(tmp_path):
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"a": 1}\nnot json\n')
    result = invoke(["report", str(junk)])
    assert result.exit_code == 2 and f"no scorable result in {junk} (2 line(s) skipped)" in flat(result.output)


def prediction(key: str, status: str = "ok", output: str = "C") -> dict:
    task, item_id = key.split("/")
    return Prediction(key=key, task=task, item_id=int(item_id), status=status, output=output, gold="C").model_dump()


def test_eval_report_counts_error_records_and_failures(tmp_path):
    run = tmp_path / "run.jsonl"
    lines = [prediction(f"NC/{i}") for i in range(5)] + [prediction("NC/5", "failed", None)]
    lines += [{**prediction(f"NC/{i}"), "status": "error"} for i in (6, 7, 8)]  # not a status the scripts know
    run.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = invoke(["eval", "report", str(run), "--out", str(tmp_path / "report.md")])
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    assert "skipped 3 of 9 lines: 3 unexpected (line 7, 8, 9: status: Input should be 'ok' or 'failed')" in text
    assert "run: 1 of 6 record(s) left out of the official scores (1 failed: no reply; 0 CCQA" in text
    assert "| run n/failed/dropped |  | 6/1/1 |" in (tmp_path / "report.md").read_text()  # BU, then NC


def test_eval_report_fails_when_a_run_has_no_scorable_item(tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text(json.dumps(prediction("NC/0")) + "\n")
    bad.write_text("".join(json.dumps(prediction(f"NC/{i}", "failed", None)) + "\n" for i in range(3)))
    result = invoke(["eval", "report", str(good), str(bad), "--out", str(tmp_path / "report.md")])
    assert result.exit_code == 1, result.output
    assert "no scorable item in bad: every record failed or was dropped" in flat(result.output)


def test_crossvid_with_every_item_missing_its_media_fails_under_skip(tmp_path):
    tree = write_crossvid(tmp_path / "cv")
    for video in (tree / "videos").rglob("*.mp4"):
        video.unlink()
    args = ["eval", "crossvid", "--root", str(tree), "--tasks", "NC", "--mode", "single-pass", "--on-missing", "skip"]
    args += ["--vlm-url", "http://127.0.0.1:9/v1", "--vlm-model", "m", "--out", str(tmp_path / "r.jsonl")]
    result = invoke(args)
    assert result.exit_code == 2, result.output
    assert "every item's media are missing: nothing to run" in flat(result.output)
    assert not (tmp_path / "r.jsonl").exists()


def test_one_report_reads_run_and_crossvid_records_together(tmp_path):
    scripts, episodes, cv = tmp_path / "scripts.jsonl", tmp_path / "expert.jsonl", tmp_path / "cv.jsonl"
    write_jsonl(generate("NC", 2, seed=1), scripts)
    run = ["run", "--policy", "expert", "--scripts", str(scripts), "--no-traces", "--out", str(episodes)]
    assert invoke(run).exit_code == 0
    cv.write_text("".join(json.dumps(prediction(f"NC/{i}")) + "\n" for i in range(3)))
    for command in (["report"], ["eval", "report"]):  # `eval report` is an alias
        result = invoke([*command, str(episodes), str(cv), "--out", str(tmp_path / "report.md")])
        assert result.exit_code == 0, result.output
        assert "│ NC │ expert │ 2 │ 100.0 │" in flat(result.output)
        assert "| cv n/failed/dropped |" in (tmp_path / "report.md").read_text()
    failed = tmp_path / "failed.jsonl"
    failed.write_text(json.dumps(prediction("NC/0", "failed", None)) + "\n")
    result = invoke(["report", str(episodes), str(failed), "--out", str(tmp_path / "report.md")])
    assert result.exit_code == 1 and "no scorable item in failed" in flat(result.output)
