"""The scripted expert through the real agent loop and the real simulator."""

from __future__ import annotations

import json
import re
from functools import cache

import pytest

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.policies.expert import ExpertPolicy, plan
from agentcvr.script import Evidence, Script
from agentcvr.tasks import TASK_ORDER, get_task
from scripts_gen.generate import generate
from simulator.noise import Noise
from simulator.script_sim import ScriptSimulator


@cache
def scripts() -> dict[str, Script]:
    return {s.id: s for s in generate("all", 6, seed=31)}


def run(script: Script, policy: ExpertPolicy | None = None, perception=None, limits: Limits | None = None):
    agent = Agent(policy or ExpertPolicy(scripts()), perception or ScriptSimulator(scripts()), limits)
    return agent.run(script.episode)


@pytest.mark.parametrize("task", TASK_ORDER)
def test_expert_visits_the_evidence_then_answers_the_official_form(task):
    for script in (s for s in scripts().values() if s.task == task):
        result = run(script)
        visits = plan(script)
        assert [s.kind for s in result.steps] == ["tool"] * len(visits) + ["answer"]
        assert result.turns == len(visits) + 1 and result.format_errors == 0
        for step, visit in zip(result.steps, visits, strict=False):
            assert step.tool == visit.tool and all(fact in step.observation for fact in visit.facts)
        assert result.answer == get_task(task).official_form(script.answer)
        assert get_task(task).official(result.answer, script.episode) == 1.0


def test_plan_merges_evidence_at_the_same_place():
    script = next(s for s in scripts().values() if s.task == "NC")
    item = script.evidence[0]
    twin = item.model_copy(update={"fact": item.fact[:10]})
    listen = Evidence(video=item.video, start=item.start, end=item.end, tool="listen", fact="x")
    visits = plan(script.model_copy(update={"evidence": [item, twin, listen]}))
    assert [(v.tool, v.facts) for v in visits] == [("observe", (item.fact, item.fact[:10])), ("listen", ("x",))]
    assert "focus" not in visits[1].arguments


def test_expert_falls_back_to_a_random_answer_when_the_evidence_is_not_seen():
    deaf = ScriptSimulator(scripts(), noise=Noise(drop_probability=1.0))  # every event dropped
    wrong = 0
    for script in scripts().values():
        result = run(script, perception=deaf)
        assert result.answer is not None and result.failure is None  # still a well-formed, parsed answer
        wrong += result.answer != get_task(script.task).official_form(script.answer)
    assert wrong >= 0.7 * len(scripts())


def test_expert_answers_at_the_turn_limit():
    script = next(s for s in scripts().values() if len(plan(s)) >= 3)
    result = run(script, limits=Limits(max_turns=2))
    assert result.forced and result.turns == 2 and result.answer is not None
    assert result.tool_calls == 1


def test_several_calls_per_turn():
    script = next(s for s in scripts().values() if s.task == "CCQA")
    result = run(script, policy=ExpertPolicy(scripts(), calls_per_turn=4))
    assert result.turns == -(-len(plan(script)) // 4) + 1
    assert get_task("CCQA").official(result.answer, script.episode) == 1.0


def test_tool_calls_are_openai_style():
    script = next(s for s in scripts().values() if s.task == "FSA")
    policy = ExpertPolicy(scripts())
    output = policy.act([{"role": "system", "content": "..."}, {"role": "user", "content": "..."}], script.episode)
    (call,) = output.tool_calls
    assert call["type"] == "function" and call["function"]["name"] == "observe"
    assert json.loads(call["function"]["arguments"]) == plan(script)[0].arguments


def test_unknown_episode_fails_clearly():
    stranger = generate("NC", 1, seed=999)[0].with_episode(id="nope")
    with pytest.raises(KeyError, match="no script for episode 'nope'"):
        ExpertPolicy(scripts()).act([], stranger.episode)


class Transcribing:
    """A perception that returns each scripted observation as a reader of OCR or Whisper output would get it:
    other case, other punctuation, same words."""

    def __init__(self, inner: ScriptSimulator):
        self.inner = inner

    def observe(self, episode, action) -> str:
        return self._heard(self.inner.observe(episode, action))

    def listen(self, episode, action) -> str:
        return self._heard(self.inner.listen(episode, action))

    @staticmethod
    def _heard(text: str) -> str:
        return text.upper().replace(".", "").replace(":", ",")


def test_expert_reads_facts_regardless_of_case_and_punctuation():
    real_like = Transcribing(ScriptSimulator(scripts()))
    for script in scripts().values():
        if script.task == "CCQA":  # the judge scores words, not letters: covered by the official form below
            continue
        result = run(script, perception=real_like)
        assert result.answer == get_task(script.task).official_form(script.answer), script.id


def test_generated_speech_has_no_speaker_labels():
    """Whisper hears the words, never a 'Name:' label: a label in the script would be a fact no real run delivers."""
    lines = [e.speech for s in generate("all", 20, seed=5) for v in s.videos for e in v.events if e.speech]
    assert lines and not [line for line in lines if re.match(r"^[A-Z][a-z]+: ", line)]
