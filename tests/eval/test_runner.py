"""The episode runner: append as it goes, resume by id, survive a torn last line, summarize."""

import json

from agentcvr.agent import Agent
from agentcvr.policies.scripted import ScriptedPolicy
from agentcvr.spec import Component, RunSpec
from eval.runner import load_results, run_episodes, score_table, summarize

SPEC = RunSpec(policy=Component(name="scripted"), perception=Component(name="sim"))


def answer(letter):
    return f'<tool_call>{{"name": "answer", "arguments": {{"answer": "{letter}"}}}}</tool_call>'


def test_results_are_appended_and_resumed(tmp_path, pet_script, simulator):
    second = pet_script.with_episode(id="pets-2")
    episodes = [pet_script.episode, second.episode]
    out = tmp_path / "traces.jsonl"
    sim = type(simulator)({pet_script.id: pet_script, second.id: second})

    calls = []

    def run_one(episode):
        calls.append(episode.id)
        return Agent(ScriptedPolicy([answer("B")]), sim).run(episode)

    first = run_episodes(run_one, episodes[:1], SPEC, out=out)
    assert [r.official for r in first] == [1.0]
    with out.open("a") as handle:
        handle.write('{"result": {"episode_id": "torn')  # a crash mid-write
    both = run_episodes(run_one, episodes, SPEC, out=out)
    assert calls == ["pets-1", "pets-2"]  # the finished one was skipped
    assert [r.result.episode_id for r in both] == ["pets-1", "pets-2"]
    assert set(load_results(out)) == {"pets-1", "pets-2"}
    line = json.loads(out.read_text().splitlines()[0])
    assert line["result"]["steps"][0]["tool"] == "answer"  # the trace is kept with the score
    assert RunSpec.model_validate(line["spec"]).digest == SPEC.digest  # and the settings behind it


def test_summary_counts_failures_and_turns(pet_script, simulator):
    ok = Agent(ScriptedPolicy([answer("B")]), simulator).run(pet_script.episode)
    bad = Agent(ScriptedPolicy(["?"] * 4), simulator).run(pet_script.episode)
    from eval.runner import score

    rows = summarize([score(ok, pet_script.episode), score(bad, pet_script.episode)])
    assert rows["NC"]["n"] == 2 and rows["NC"]["official"] == 0.5 and rows["NC"]["failures"] == 1
    assert rows["NC"]["turns"] == 2.5
    table = score_table({"scripted": rows})
    assert table.row_count == 1 and table.columns[3].header == "success %"
