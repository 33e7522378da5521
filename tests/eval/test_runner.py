"""The one items path (eval/runner.py) with the agent as predictor, as `agentcvr run` drives it: append as it goes,
resume only when asked, survive a torn last line, retry a policy error then record the failure, stop a try that runs
past its timeout, summarize."""

import asyncio
import io
import json
import threading
import time

import pytest
from rich.console import Console

from agentcvr import cancel
from agentcvr.agent import Agent
from agentcvr.interfaces import PolicyOutput
from agentcvr.policies.scripted import ScriptedPolicy
from agentcvr.spec import Component, RunSpec
from agentcvr.trace_view import trace_panel
from eval.agent_mode import AgentPredictor, EpisodeItem, grade_episode
from eval.record import read_latest
from eval.runner import RunConfig, run_items
from eval.summary import score_table, summarize

SPEC = RunSpec(policy=Component(name="scripted"), perception=Component(name="sim"))
FAST = {"backoff": 0.001, "concurrency": 1}


def answer(letter):
    return f'<tool_call>{{"name": "answer", "arguments": {{"answer": "{letter}"}}}}</tool_call>'


def run(episodes, agent, out, **config):
    predictor = AgentPredictor(agent)
    try:
        items = [EpisodeItem(e) for e in episodes]
        return asyncio.run(
            run_items(items, predictor, out, RunConfig(**{**FAST, **config}), spec=SPEC, grade=grade_episode)
        )
    finally:
        predictor.close()


class Answers:
    """Answers B to every episode and counts the calls (ScriptedPolicy's outputs run out)."""

    protocol = "tools"

    def __init__(self):
        self.calls = []

    def act(self, messages, episode):
        self.calls.append(episode.id)
        return PolicyOutput(content=answer("B"))


def test_results_are_appended_and_resumed_only_when_asked(tmp_path, pet_script, simulator):
    second = pet_script.with_episode(id="pets-2")
    episodes = [pet_script.episode, second.episode]
    out = tmp_path / "traces.jsonl"
    policy = Answers()
    agent = Agent(policy, type(simulator)({pet_script.id: pet_script, second.id: second}))
    first = run(episodes[:1], agent, out)
    assert [r.official for r in first] == [1.0]
    with out.open("a") as handle:
        handle.write('{"result": {"episode_id": "torn')  # a crash mid-write
    with pytest.raises(FileExistsError, match="pass --resume"):
        run(episodes, agent, out)
    both = run(episodes, agent, out, resume=True)
    assert policy.calls == ["pets-1", "pets-2"]  # the finished one was skipped
    assert [r.result.episode_id for r in both] == ["pets-1", "pets-2"]
    assert set(read_latest(out)[0]) == {"pets-1", "pets-2"}
    line = json.loads(out.read_text().splitlines()[0])
    assert line["result"]["steps"][0]["tool"] == "answer"  # the trace is kept with the score
    assert RunSpec.model_validate(line["spec"]).digest == SPEC.digest  # and the settings behind it


class DownThenBack(Answers):
    """A backend that fails its first `down` calls (HTTP errors, OOM), then answers."""

    def __init__(self, down):
        super().__init__()
        self.down = down

    def act(self, messages, episode):
        if len(self.calls) < self.down:
            self.calls.append(episode.id)
            raise ConnectionError("server down")
        return super().act(messages, episode)


def test_a_policy_error_is_retried_then_recorded_as_failed_and_scores_0(tmp_path, pet_script, simulator):
    back = run([pet_script.episode], Agent(DownThenBack(down=2), simulator), None, retries=3)
    assert [(r.status, r.attempts, r.official) for r in back] == [("ok", 3, 1.0)]
    records = run([pet_script.episode], Agent(DownThenBack(down=9), simulator), tmp_path / "a.jsonl", retries=3)
    assert [(r.status, r.attempts, r.official, r.strict) for r in records] == [("failed", 3, 0.0, 0.0)]
    assert records[0].error == "PolicyBackendError: ConnectionError: server down"
    assert summarize(records).rows["NC"].failed == 1 and summarize(records).scorable == 0
    # the last try's partial trace is kept, on disk too, and the trace view shows the error
    written = read_latest(tmp_path / "a.jsonl")[0][pet_script.id].result
    assert written == records[0].result and written.failure == "policy_error"
    assert [(s.kind, s.error) for s in written.steps] == [("policy_error", "ConnectionError: server down")]
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(trace_panel(written, pet_script.episode))
    shown = console.export_text()
    assert "server down" in shown and "failure=policy_error" in shown


class Stuck:
    """A policy that never answers but checks for cancellation, as llama.cpp does between tokens."""

    protocol = "tools"

    def __init__(self):
        self.stopped = threading.Event()

    def act(self, messages, episode):
        try:
            while True:
                cancel.check()
                time.sleep(0.005)
        except cancel.Cancelled:
            self.stopped.set()
            raise


def test_a_try_past_its_timeout_is_stopped_and_recorded(tmp_path, pet_script, simulator):
    policy = Stuck()
    records = run([pet_script.episode], Agent(policy, simulator), None, retries=1, timeout=0.05)
    assert [(r.status, r.error) for r in records] == [("failed", "timed out after 0.05 s")]
    assert policy.stopped.wait(2)  # the worker thread was told to stop, not left running
    empty = records[0].result  # no step came back from the stopped try: an explicit empty trace naming why
    assert (empty.episode_id, empty.steps, empty.failure) == (pet_script.id, [], "timed out after 0.05 s")


def test_a_failed_item_of_a_predictor_without_traces_has_none(pet_script):
    class Down:
        async def predict(self, item):
            raise ConnectionError("server down")

    items = [EpisodeItem(pet_script.episode)]
    records = asyncio.run(run_items(items, Down(), None, RunConfig(**FAST, retries=1), spec=SPEC))
    assert [(r.status, r.result) for r in records] == [("failed", None)]  # a single-pass VLM call has no trace


def test_summary_counts_failures_and_turns(tmp_path, pet_script, simulator):
    ok = run([pet_script.episode], Agent(ScriptedPolicy([answer("B")]), simulator), None)
    bad = run([pet_script.episode], Agent(ScriptedPolicy(["?"] * 4), simulator), None)
    down = run([pet_script.episode], Agent(DownThenBack(down=9), simulator), None, retries=1)
    summary = summarize([*ok, *bad])
    row = summary.rows["NC"]
    assert row.n == 2 and row.official == 0.5 and row.unanswered == 1 and row.failed == 0 and row.turns == 2.5
    with_failure = summarize([*ok, *bad, *down]).rows["NC"]  # a failure's partial trace is not averaged
    assert (with_failure.n, with_failure.failed, with_failure.turns) == (3, 1, 2.5)
    table = score_table({"scripted": summary})
    assert table.row_count == 1 and table.columns[3].header == "success %"
