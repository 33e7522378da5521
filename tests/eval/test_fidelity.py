"""Sim-to-real fidelity: the comparison table rows, and a real run over rendered BU and FSA episodes."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from rich.console import Console

from agentcvr.episode import Episode, VideoRef
from agentcvr.interfaces import Limits
from agentcvr.script import Event, Evidence, Script, VideoScript, write_jsonl
from agentcvr.spec import Component, RunSpec, SpecMismatch
from agentcvr.trace import EpisodeResult, Step
from eval.fidelity import Pair, compare, finished_pairs, run_fidelity
from tests.rendered import needs_tools


def _episode(task: str, answer) -> Episode:
    options = ["A. one", "B. two", "C. three"] if task != "FSA" else []
    videos = [VideoRef(index=1, duration=60.0), VideoRef(index=2, duration=60.0)]
    return Episode(id="e", task=task, question="?", options=options, videos=videos, answer=answer)


def _result(answer: str | None, *seconds: float) -> EpisodeResult:
    steps = [Step(turn=i, kind="tool", tool="observe", tool_seconds=s) for i, s in enumerate(seconds)]
    return EpisodeResult(episode_id="e", task="x", answer=answer, steps=steps)


@pytest.mark.parametrize(
    ("task", "truth", "sim", "real", "agree", "iou"),
    [
        ("NC", "B", "B", "B", True, None),  # same letter
        ("NC", "B", "B", " b.", True, None),  # same after normalization
        ("NC", "B", "B", "C", False, None),  # different decision
        ("NC", "B", "B", None, False, None),  # real run failed to answer
        ("BU", ["A", "C"], "AC", "C, A", True, None),  # multi-select: the set decides
        ("FSA", [10, 20], "10,20", "10,20", None, 1.0),
        ("FSA", [10, 20], "10,20", "15,25", None, 1 / 3),  # CrossVid IoU: 5 / (25 - 10)
        ("FSA", [10, 20], "10,20", "no idea", None, 0.0),  # unparseable counts 0
    ],
)
def test_compare(task, truth, sim, real, agree, iou):
    pair = compare(_episode(task, truth), _result(sim, 0.001), _result(real, 2.0, 3.0))
    assert pair.agree == agree
    assert pair.iou == (pytest.approx(iou) if iou is not None else None)
    assert pair.sim_call_seconds == [0.001] and pair.real_call_seconds == [2.0, 3.0]


def fsa_script() -> Script:
    """A short FSA item: the reference step in video 1 at 4-12 s, the same step in video 2 at 14-24 s."""
    return Script(
        id="FSA-small",
        task="FSA",
        question="Find the segment of video 2 that serves the same function as the reference segment of video 1.",
        answer=[14, 24],
        context={"reference segment": "4-12 s of video 1"},
        videos=[
            VideoScript(index=1, duration=20, events=[Event(start=4, end=12, visual="The cook cracks two eggs.")]),
            VideoScript(
                index=2,
                duration=30,
                events=[
                    Event(start=2, end=10, visual="The cook washes a pan."),
                    Event(start=14, end=24, visual="The cook breaks three eggs into a bowl."),
                ],
            ),
        ],
        evidence=[
            Evidence(video=1, start=4, end=12, fact="The cook cracks two eggs."),
            Evidence(video=2, start=14, end=24, fact="The cook breaks three eggs into a bowl."),
        ],
    )


@pytest.mark.slow
@needs_tools
def test_expert_fidelity_on_rendered_episodes(tmp_path):
    from scripts_gen.generate import generate
    from scripts_gen.render import render_scripts

    write_jsonl([*generate("BU", 1, seed=3), fsa_script()], tmp_path / "scripts.jsonl")
    render_scripts(tmp_path / "scripts.jsonl", tmp_path / "rendered", progress=False)
    console = Console(record=True, width=200)
    report = run_fidelity(tmp_path / "rendered", "expert", out_dir=tmp_path / "out", console=console)

    rows = {row.task: row for row in report.rows()}
    assert rows["BU"].overlap == 1.0 and rows["FSA"].iou == 1.0  # OCR delivered every evidence fact verbatim
    assert rows["all"].real_accuracy == 1.0 and rows["all"].real_errors == 0
    assert rows["all"].facts_verbatim == rows["all"].facts_normalized == rows["all"].facts > 0
    assert rows["all"].real_call_ms > rows["all"].sim_call_ms > 0
    assert "Sim-to-real fidelity" in console.export_text()
    summary = json.loads((tmp_path / "out" / "fidelity.json").read_text())
    assert summary["episodes"] == 2 and summary["rows"][-1]["task"] == "all"
    pairs = (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()
    assert len(pairs) == 2 and json.loads(pairs[1])["real"]["steps"][0]["tool"] == "observe"

    # A kill tore the last record: running again reads the first pair back and runs only the second episode.
    (tmp_path / "out" / "pairs.jsonl").write_text(pairs[0] + "\n" + pairs[1][: len(pairs[1]) // 2])
    console = Console(record=True, width=200)
    again = run_fidelity(tmp_path / "rendered", "expert", out_dir=tmp_path / "out", console=console)
    assert "resumed: 1 episodes read back" in console.export_text()
    assert again.pairs[0] == report.pairs[0]  # read back as it was
    assert [p.real_answer for p in again.pairs] == [p.real_answer for p in report.pairs]
    assert len((tmp_path / "out" / "pairs.jsonl").read_text().splitlines()) == 2


def test_pairs_of_another_spec_are_refused_naming_what_differs(tmp_path):
    pair = Pair("BU-000000", "BU", "A", "A", True, None, 1.0, 1.0)
    spec = RunSpec(
        policy=Component(name="gguf"),
        perception=Component(name="real"),
        reference=Component(name="sim"),
        limits=Limits(max_turns=10),
    )
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"spec": spec.model_dump(mode="json"), "pair": asdict(pair)}) + "\n")
    assert finished_pairs(path, spec) == {"BU-000000": pair}
    other = spec.model_copy(update={"limits": Limits(max_turns=20), "reference": Component(name="llm-sim")})
    with pytest.raises(SpecMismatch, match='limits.max_turns: 20 != 10; reference.name: "llm-sim" != "sim"'):
        finished_pairs(path, other)
    # a folder written before specs were recorded (a "setting" dict) is not resumed either
    path.write_text(json.dumps({"setting": {"policy": "gguf"}, "pair": asdict(pair)}) + "\n")
    with pytest.raises(SpecMismatch, match="1 record\\(s\\) without a run spec"):
        finished_pairs(path, spec)
