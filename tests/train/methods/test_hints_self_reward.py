"""Hint trigger, template and LLM hints (against the real OpenAI-protocol stub), self-reward and the judge hook."""

from __future__ import annotations

import pytest

from agentcvr.episode import Episode, VideoRef
from agentcvr.openai_stub import OpenAIStub
from train.methods.hints import HintTrigger, LLMHints, TemplateHints, with_hint
from train.methods.self_reward import JudgeReward, majority_answer, self_rewards


def episode(task: str = "PSS", answer="3->1->2") -> Episode:
    videos = [VideoRef(index=i, duration=10.0) for i in (1, 2, 3)]
    return Episode(id="e1", task=task, question="Order the segments.", videos=videos, answer=answer)


def test_trigger_needs_a_hard_streak_and_low_kl():
    trigger = HintTrigger(patience=2, max_kl=0.01)
    assert not trigger.should_hint("q", "hard", 0.001)  # streak 1
    assert not trigger.should_hint("q", "hard", 0.5)  # streak 2 but the policy still moves
    assert trigger.should_hint("q", "hard", 0.001)  # streak 3, low KL
    assert not trigger.should_hint("q", "medium", 0.0)  # left the hard tier: the streak restarts
    assert not trigger.should_hint("q", "hard", 0.0)


def test_template_hint_and_prompt_edit():
    hint = TemplateHints()(episode())
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "Order the segments."}]
    hinted = with_hint(messages, hint)
    assert hinted[-1]["content"].endswith(f"Hint: {hint}") and messages[-1]["content"] == "Order the segments."
    with pytest.raises(ValueError, match="known BU"):
        TemplateHints()(episode().model_copy(update={"task": "XX"}))


def test_llm_hints_over_http_send_the_ground_truth_and_refuse_leaks():
    with OpenAIStub() as stub:
        stub.reply(content='"Name the step in each segment before ordering them."')
        stub.reply(content="The order is 3->1->2.")
        maker = LLMHints(stub.base_url, model="tutor")
        assert maker(episode()) == "Name the step in each segment before ordering them."
        assert "[Ground Truth Answer]: 3->1->2" in stub.requests[0]["messages"][0]["content"]
        assert stub.requests[0]["model"] == "tutor"
        with pytest.raises(ValueError, match="reveals the answer"):
            maker(episode())


def test_majority_vote_with_likelihood_tie_break():
    assert majority_answer(["A", "B", "A", None], [0.1, 0.9, 0.2, 1.0]) == "A"  # 2 votes beat 1
    assert majority_answer(["A", "B", "B", "A"], [0.9, 0.5, 0.6, 0.7]) == "A"  # tie: mean .8 beats .55
    assert majority_answer([None, None], [0.1, 0.2]) is None
    # two groups of 3: majority B in the first, C in the second (tie C/A broken by likelihood .9 vs .1)
    assert self_rewards(["B", "B", "A", "C", "A", None], [0.1, 0.1, 0.9, 0.9, 0.1, 0.5], 3) == [1, 1, 0, 1, 0, 0]


def test_judge_reward_over_http():
    with OpenAIStub() as stub:
        stub.reply(content='{"score": 0.75}')
        stub.reply(content="no json here")
        judge = JudgeReward(stub.base_url, model="judge")
        scores = judge(["trace one", "trace two"], question=["q1", "q2"], answer=["A", "B"])
        assert scores == [0.75, None]  # unparseable -> None, which TRL leaves out
        assert "[Ground Truth Answer]: A" in stub.requests[0]["messages"][0]["content"]
