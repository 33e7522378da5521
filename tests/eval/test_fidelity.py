"""Sim-to-real fidelity: the comparison table rows; the one items path's retries, timeout and resume under the same
spec alone (two rule simulators standing in for the two perceptions); a real run over rendered BU and FSA episodes."""

from __future__ import annotations

import io
import json
import time
from dataclasses import asdict

import pytest
from rich.console import Console

from agentcvr import cancel
from agentcvr.agent import Agent
from agentcvr.episode import Episode, VideoRef
from agentcvr.interfaces import Limits
from agentcvr.policies.expert import ExpertPolicy
from agentcvr.script import Event, Evidence, Script, VideoScript, write_jsonl
from agentcvr.spec import Component, RunSpec, SpecMismatch
from agentcvr.trace import EpisodeResult, Step
from eval.agent_mode import AgentPredictor
from eval.fidelity import Pair, compare, run_fidelity, run_pairs
from eval.record import read_latest
from eval.runner import RunConfig
from scripts_gen.generate import generate
from simulator.script_sim import ScriptSimulator
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
    assert summary["episodes"] == 2 and summary["failed"] == {} and summary["rows"][-1]["task"] == "all"
    pairs = (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()
    assert len(pairs) == 2 and json.loads(pairs[1])["result"]["steps"][0]["tool"] == "observe"
    assert json.loads(pairs[1])["reference"]["steps"][0]["tool"] == "observe"  # the simulator's trace beside it

    # A kill tore the last record: --resume reads the first pair back and runs only the second episode.
    (tmp_path / "out" / "pairs.jsonl").write_text(pairs[0] + "\n" + pairs[1][: len(pairs[1]) // 2])
    with pytest.raises(FileExistsError, match="pass --resume"):
        run_fidelity(tmp_path / "rendered", "expert", out_dir=tmp_path / "out", console=console)
    console = Console(record=True, width=200)
    resume = RunConfig(concurrency=1, resume=True)
    again = run_fidelity(tmp_path / "rendered", "expert", out_dir=tmp_path / "out", console=console, config=resume)
    assert "resumed: 1 episodes read back" in console.export_text()
    assert again.pairs[0] == report.pairs[0]  # computed again from the traces read back
    assert [p.real_answer for p in again.pairs] == [p.real_answer for p in report.pairs]
    assert len(read_latest(tmp_path / "out" / "pairs.jsonl")[0]) == 2


SCRIPTS = generate("NC", 2, seed=5)
TABLE = {script.id: script for script in SCRIPTS}
CHOSEN = [(script, script.episode) for script in SCRIPTS]
SPEC = RunSpec(
    policy=Component(name="expert"), perception=Component(name="real"), reference=Component(name="sim"), limits=Limits()
)
FAST = {"concurrency": 1, "backoff": 0.001}


class Flaky:
    """The expert, whose backend fails its first `down` calls."""

    protocol = "tools"

    def __init__(self, down: int = 0):
        self.expert, self.down, self.calls = ExpertPolicy(TABLE), down, 0

    def act(self, messages, episode):
        self.calls += 1
        if self.calls <= self.down:
            raise ConnectionError("server down")
        return self.expert.act(messages, episode)


def pairs_of(policy, out, spec=SPEC, **config):
    """Both runs through two rule simulators (the second standing in for real perception)."""
    reference = Agent(policy, ScriptSimulator(TABLE), Limits(max_turns=6))
    predictor = AgentPredictor(Agent(policy, ScriptSimulator(TABLE), Limits(max_turns=6)), reference=reference)
    try:
        return run_pairs(CHOSEN, predictor, spec, out, RunConfig(**{**FAST, **config}), Console(file=io.StringIO()))
    finally:
        predictor.close()


def test_fidelity_retries_a_policy_error_and_resumes_only_when_asked(tmp_path):
    out = tmp_path / "pairs.jsonl"
    policy = Flaky(down=1)
    pairs, failed = pairs_of(policy, out, retries=2)
    assert failed == {} and [(p.episode_id, p.agree) for p in pairs] == [(s.id, True) for s in SCRIPTS]
    records = read_latest(out)[0]
    assert [r.attempts for r in records.values()] == [2, 1]  # the first episode's first try met the error
    assert all(r.result.answer == r.reference.answer == r.output and r.official == 1.0 for r in records.values())
    calls = policy.calls
    with pytest.raises(FileExistsError, match="pass --resume"):
        pairs_of(policy, out)
    again, _ = pairs_of(policy, out, resume=True)
    assert again == pairs and policy.calls == calls  # read back, nothing run again


def test_an_episode_whose_tries_all_fail_has_no_pair_and_runs_again_on_resume(tmp_path):
    out = tmp_path / "pairs.jsonl"
    pairs, failed = pairs_of(Flaky(down=2), out, retries=2)  # the reference run of the first episode fails twice
    first, second = (script.id for script in SCRIPTS)
    assert [p.episode_id for p in pairs] == [second]
    assert failed == {first: "PolicyBackendError: ConnectionError: server down (in the reference run)"}
    assert (
        read_latest(out)[0][first].result.failure
        == "PolicyBackendError: ConnectionError: server down (in the reference run)"
    )
    pairs, failed = pairs_of(Flaky(), out, resume=True)
    assert failed == {} and [p.episode_id for p in pairs] == [first, second]


def test_a_try_past_its_timeout_is_stopped_and_recorded_as_failed(tmp_path):
    class Stuck:
        protocol = "tools"

        def act(self, messages, episode):
            while True:
                cancel.check()
                time.sleep(0.005)

    pairs, failed = pairs_of(Stuck(), None, retries=1, timeout=0.05)
    assert pairs == [] and set(failed.values()) == {"timed out after 0.05 s"}


def test_pairs_of_another_spec_are_refused_naming_what_differs(tmp_path):
    out = tmp_path / "pairs.jsonl"
    pairs_of(Flaky(), out)
    other = SPEC.model_copy(update={"limits": Limits(max_turns=10), "reference": Component(name="llm-sim")})
    with pytest.raises(SpecMismatch, match='limits.max_turns: 10 != 20; reference.name: "llm-sim" != "sim"'):
        pairs_of(Flaky(), out, spec=other, resume=True)


def test_a_folder_written_before_pairs_were_records_is_refused(tmp_path):
    out = tmp_path / "pairs.jsonl"
    pair = Pair("NC-000000", "NC", "A", "A", True, None, 1.0, 1.0)
    out.write_text(json.dumps({"spec": SPEC.model_dump(mode="json"), "pair": asdict(pair)}) + "\n")
    with pytest.raises(SpecMismatch, match="holds lines that are not records"):
        pairs_of(Flaky(), out, resume=True)


def test_the_command_refuses_another_specs_folder_before_loading_anything(tmp_path):
    """`agentcvr eval fidelity --resume` into a folder of another policy's records: exit 2, naming what differs."""
    from typer.testing import CliRunner

    from agentcvr.cli import app
    from eval.record import Record, RecordLog

    rendered, out = tmp_path / "rendered", tmp_path / "out"
    rendered.mkdir()
    write_jsonl(SCRIPTS, rendered / "scripts.jsonl")
    videos = [
        {"index": v.index, "path": f"{s.id}/video_{v.index}.mp4", "offset": 0.0} for s in SCRIPTS for v in s.videos
    ]
    manifest = [{"id": s.id, "videos": [v for v in videos if v["path"].startswith(s.id)]} for s in SCRIPTS]
    (rendered / "manifest.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in manifest))
    log = RecordLog(out / "pairs.jsonl")
    log.append(Record(key=SCRIPTS[0].id, task="NC", spec=SPEC.model_copy(update={"policy": Component(name="random")})))
    log.close()
    args = ["eval", "fidelity", str(rendered), "--out", str(out), "--resume", "--retries", "2", "--timeout", "60"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 2 and 'policy.name: "expert" != "random"' in result.output, result.output
