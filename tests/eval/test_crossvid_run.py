"""The CrossVid runner end to end over the fixture tree: the official single-pass protocol on the wire (a real HTTP
stub), retries, failures, resume after `kill -9` of a real process, the report."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentcvr.openai_stub import OpenAIStub
from agentcvr.spec import Component, RunSpec
from eval.crossvid.loader import load_crossvid
from eval.crossvid.records import read_predictions
from eval.crossvid.report import markdown, write_report
from eval.crossvid.sample_tree import write_crossvid
from eval.crossvid.single_pass import SinglePassPredictor
from eval.runner import Reply, RunConfig, run_items

SPEC = RunSpec(policy=Component(name="single-pass", options={"model": "stub", "frames": 128}))
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return write_crossvid(tmp_path_factory.mktemp("crossvid"))


def answer_for(request):
    text = "".join(p.get("text", "") for p in request["messages"][1]["content"])
    if "Timestamps of frames" in text:
        return "4,8"
    if "shuffled segments" in text:
        return "3->2->1"
    if "open-ended question" in text:
        return "A sieve in video A, a towel in video B."
    return "B "


@pytest.mark.slow  # decodes 128 frames per item of the fixture tree, ~6 s
def test_single_pass_speaks_the_official_protocol(tree, tmp_path):
    items, _ = load_crossvid(tree)
    out = tmp_path / "sp.jsonl"
    with OpenAIStub() as stub:
        for _ in items:
            stub.respond(answer_for)

        async def run():
            predictor = SinglePassPredictor(stub.base_url, "vlm", cache_dir=tmp_path / "frames")
            try:
                return await run_items(items, predictor, out, RunConfig(concurrency=4), spec=SPEC)
            finally:
                await predictor.aclose()

        records = asyncio.run(run())
    assert all(r.status == "ok" for r in records), [r.error for r in records if r.error]
    by_prompt, texts = {}, []
    for request in stub.requests:
        assert request["temperature"] == 0.0 and request["top_p"] == 0.95 and request["max_tokens"] == 8192
        assert request["messages"][0] == {"role": "system", "content": "You are a helpful video analyzer."}
        parts = request["messages"][1]["content"]
        images = [p for p in parts if p["type"] == "image_url"]
        assert all(p["image_url"]["url"].startswith("data:image/jpeg;base64,") for p in images)
        text = "".join(p.get("text", "") for p in parts)
        by_prompt[text.split("\n")[1][:40]] = (text, len(images))
        texts.append(text)
    counts = {key: n for key, (_, n) in by_prompt.items()}
    assert counts["Provide you three videos assembling the "] == 3 * 42  # PEA: 42 per clip, not by length
    assert counts["Provide you two cooking videos, which st"] == 128  # FSA: 64 + 64
    assert counts["Provide you two synchronized UAV road re"] == 128  # MSR/MOC: 64 per view (folders)
    pi_text, pi_images = by_prompt["Provide you the beginning and the ending"]
    # 64 + 64 by duration, deduplicated: 0..4 s gives frames 0..40 (41); 8..12 s gives 80..119 (frame 120 is past
    # the end of the 120-frame file and dropped, as interval2frames drops it)
    assert pi_images == 81
    assert "Beginning:\n" in pi_text and "Ending:\n" in pi_text
    fsa_text, _ = by_prompt["Provide you two cooking videos, which st"]
    assert "between 2s and 5s in Video 1" in fsa_text or "between 1.5s and 3.25s in Video 1" in fsa_text
    assert "Timestamps of frames sampled from Video 1 are: [0, 0, 0, " in fsa_text  # int() of frame times
    uav_texts = [t for t in texts if "Objects information" in t]
    assert len(uav_texts) == 2 and any(
        "obj_3 appears in 17th frame of view A with bbox [56, 28, 169, 187]" in t for t in uav_texts
    )
    scored = {r.key: r for r in read_predictions(out).values()}
    assert scored["MOC/0"].output == "B " and scored["MOC/0"].gold == "B "
    assert len(list((tmp_path / "frames").iterdir())) > 0  # decoded frames cached on disk
    # a second model (a fresh process, in effect) decodes nothing again
    with OpenAIStub() as stub:
        for _ in items:
            stub.respond(answer_for)

        async def second():
            predictor = SinglePassPredictor(stub.base_url, "other-vlm", cache_dir=tmp_path / "frames")
            try:
                await run_items(items, predictor, tmp_path / "second.jsonl", RunConfig(concurrency=4), spec=SPEC)
                return predictor.cache
            finally:
                await predictor.aclose()

        cache = asyncio.run(second())
    assert cache.misses == 0 and cache.hits >= len(items)


class Flaky:
    """Fails `failures` times per item, then answers; or sleeps past the timeout."""

    def __init__(self, failures=0, sleep=0.0):
        self.failures, self.sleep, self.calls = failures, sleep, {}

    async def predict(self, item):
        self.calls[item.key] = self.calls.get(item.key, 0) + 1
        await asyncio.sleep(self.sleep)
        if self.calls[item.key] <= self.failures:
            raise ConnectionError("server down")
        return Reply(output="B")


def test_retries_with_backoff_then_failure_is_recorded(tree, tmp_path):
    items, _ = load_crossvid(tree, tasks=["NC", "CC"])
    config = RunConfig(concurrency=2, retries=3, backoff=0.01)
    records = asyncio.run(run_items(items, Flaky(failures=2), tmp_path / "a.jsonl", config, spec=SPEC))
    assert [(r.status, r.attempts) for r in records] == [("ok", 3), ("ok", 3)]
    records = asyncio.run(run_items(items, Flaky(failures=5), tmp_path / "b.jsonl", config, spec=SPEC))
    assert [(r.status, r.error) for r in records] == [("failed", "ConnectionError: server down")] * 2
    records = asyncio.run(
        run_items(items, Flaky(sleep=1.0), tmp_path / "c.jsonl", RunConfig(retries=1, timeout=0.05), spec=SPEC)
    )
    assert [r.error for r in records] == ["timed out after 0.05 s"] * 2
    # resume retries the failed ones and skips nothing else; the last line for a key wins
    records = asyncio.run(run_items(items, Flaky(), tmp_path / "b.jsonl", RunConfig(resume=True), spec=SPEC))
    assert [r.status for r in records] == ["ok", "ok"]
    assert len((tmp_path / "b.jsonl").read_text().splitlines()) == 4
    with pytest.raises(FileExistsError, match="--resume"):
        asyncio.run(run_items(items, Flaky(), tmp_path / "b.jsonl", RunConfig(), spec=SPEC))


@pytest.mark.slow  # two real processes, ~10 s
def test_kill_9_then_resume_scores_every_item_once(tmp_path):
    """A real `agentcvr eval crossvid` process is killed mid-run; `--resume` finishes without duplicates or losses."""
    items = {"NC": [{**json.loads(json.dumps(_nc())), "id": i} for i in range(40)]}
    tree = write_crossvid(tmp_path / "cv", items=items)
    out = tmp_path / "run.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}

    def slow(request):
        time.sleep(0.05)
        return "C"

    cli = [sys.executable, "-c", "from agentcvr.cli import app; app()"]
    command = cli + ["eval", "crossvid", "--root", str(tree), "--mode", "single-pass"]
    command += ["--vlm-model", "vlm", "--concurrency", "2", "--out", str(out), "--frame-cache", str(tmp_path / "f")]
    with OpenAIStub() as stub:
        for _ in range(200):
            stub.respond(slow)
        process = subprocess.Popen(
            command + ["--vlm-url", stub.base_url], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 8):
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        before = len(out.read_text().splitlines())
        assert 8 <= before < 40, f"the run must be killed in the middle: {process.stderr.read()[-1500:]}"
        finished = subprocess.run(
            command + ["--vlm-url", stub.base_url, "--resume"], env=env, capture_output=True, text=True
        )
    assert finished.returncode == 0, finished.stderr[-2000:]
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    keys = [line["key"] for line in lines if line["status"] == "ok"]
    assert sorted(keys) == sorted(f"NC/{i}" for i in range(40))  # none lost, none scored twice
    assert len(stub.requests) < 40 + 2 * 2 + 1  # only in-flight items were asked twice
    assert Path(out.with_suffix(".md")).is_file() and Path(out.with_suffix(".png")).is_file()


def _nc():
    from eval.crossvid.sample_tree import ITEMS

    return ITEMS["NC"][0]


def test_report_sets_runs_beside_the_published_rows(tree, tmp_path):
    items, _ = load_crossvid(tree)
    good = asyncio.run(run_items(items, Flaky(), tmp_path / "good.jsonl", RunConfig(concurrency=4), spec=SPEC))
    bad = asyncio.run(run_items(items, Flaky(failures=9), tmp_path / "bad.jsonl", RunConfig(retries=1), spec=SPEC))
    text = markdown({"good": good, "bad": bad})
    assert "| good (official) |" in text and "| good (strict) |" in text and "| bad (strict) |" in text
    assert "| AgentCVR-8B (published) | 33.88 | 43.65 |" in text
    row = next(line for line in text.splitlines() if line.startswith("| good (official)"))
    assert row.split(" | ")[2] == "0.00" and row.split(" | ")[3] == "0.00"  # NC, CC: "B" vs gold "C"
    bad_row = next(line for line in text.splitlines() if line.startswith("| bad (official)"))
    assert bad_row.count("–") == 14  # every item failed: no official score anywhere
    md, png = write_report({"good": good, "bad": bad}, tmp_path / "report.md")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "report.png" in md.read_text()


def test_cli_reports_missing_media_then_skips_or_fails(tmp_path):
    from typer.testing import CliRunner

    from agentcvr.cli import app

    tree = write_crossvid(tmp_path / "cv", items={"NC": [_nc(), {**_nc(), "id": 1, "videos": ["movie/gone.mp4"] * 4}]})
    (tree / "videos" / "movie" / "gone.mp4").unlink()
    (tree / "QA" / "CC.json").write_text('[{"id": 5, "question": "?"}]')  # malformed: named, recorded as failed
    base = ["eval", "crossvid", "--root", str(tree), "--tasks", "NC,CC", "--mode", "single-pass", "--vlm-model", "m"]
    base += ["--frame-cache", str(tmp_path / "f"), "--out", str(tmp_path / "r.jsonl")]
    runner = CliRunner()
    failed = runner.invoke(app, [*base, "--vlm-url", "http://127.0.0.1:9/v1"])
    assert failed.exit_code == 2
    assert "1 of 3 item(s) miss media" in failed.output and "NC/1" in failed.output
    assert "1 malformed item(s)" in failed.output and "CC/5: malformed item: missing field" in failed.output
    assert "--on-missing skip" in failed.output and not (tmp_path / "r.jsonl").exists()
    with OpenAIStub() as stub:
        stub.reply(content="C")
        ran = runner.invoke(app, [*base, "--vlm-url", stub.base_url, "--on-missing", "skip"])
    assert ran.exit_code == 0, ran.output
    records = read_predictions(tmp_path / "r.jsonl")
    assert sorted(records) == ["CC/5", "NC/0"] and records["NC/0"].output == "C"
    assert records["CC/5"].status == "failed" and records["CC/5"].attempts == 0
    again = runner.invoke(app, [*base, "--vlm-url", stub.base_url, "--on-missing", "skip"])
    assert again.exit_code == 2 and "--resume" in again.output
    other = [arg if arg != "m" else "other-vlm" for arg in base]
    refused = runner.invoke(app, [*other, "--vlm-url", stub.base_url, "--on-missing", "skip", "--resume"])
    assert refused.exit_code == 2 and 'policy.options.model: "other-vlm" != "m"' in " ".join(refused.output.split())
    # the server's URL says where the model runs, not what it is: the same spec resumes (NC/0 is done, CC/5 cannot
    # be built, so nothing is asked)
    resumed = runner.invoke(app, [*base, "--vlm-url", "http://127.0.0.1:9/v1", "--on-missing", "skip", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert {r.spec.digest for r in read_predictions(tmp_path / "r.jsonl").values()} == {records["NC/0"].spec.digest}
    report = runner.invoke(app, ["eval", "report", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "rep.md")])
    assert report.exit_code == 0 and "| r (official) | – | 100.00 | – |" in (tmp_path / "rep.md").read_text()
