"""The embedded GGUF master (Qwen2.5-Coder-0.5B, llama.cpp on CPU) running real episodes.

Marked `gguf`: it needs the weights (`agentcvr models`, which CI runs) and takes ~10-20 s on one thread.
"""

import itertools
import json

import pytest

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.models import SMALL_LLM, get_spec, models_dir
from agentcvr.parsing import ParsedTurn, parse_turn
from agentcvr.prompts import FORCE_ANSWER, initial_messages
from agentcvr.script import Event, Evidence, Script, VideoScript
from agentcvr.session import FORCED_KEY, RECOVERY_KEY
from simulator.script_sim import ScriptSimulator

pytestmark = pytest.mark.gguf

WEIGHTS = get_spec(SMALL_LLM).path(models_dir())  # the 0.5B: the same code path as the 1.5B master, 3x faster


@pytest.fixture(scope="module")
def policy():
    if not WEIGHTS.is_file():
        pytest.skip(f"embedded master weights not fetched ({WEIGHTS}); run `agentcvr models`")
    from agentcvr.policies.gguf import GGUFPolicy

    return GGUFPolicy(WEIGHTS, n_ctx=2048, threads=1, seed=0)


@pytest.fixture
def umbrella_script() -> Script:
    """Hand-written: the red umbrella opens in video 2 only; the answer is B."""
    return Script(
        id="umbrella-1",
        task="NC",
        question="In which video does the woman open the red umbrella?",
        options=["A. Video 1", "B. Video 2", "C. Both videos", "D. Neither video"],
        answer="B",
        videos=[
            VideoScript(
                index=1,
                duration=60,
                events=[
                    Event(start=0, end=20, visual="A man walks along a beach carrying a surfboard."),
                    Event(start=20, end=40, visual="The man waxes the surfboard.", speech="The waves look great."),
                    Event(start=40, end=60, visual="The man paddles out into the sea."),
                ],
            ),
            VideoScript(
                index=2,
                duration=60,
                events=[
                    Event(start=0, end=25, visual="A woman waits at a bus stop as rain starts to fall."),
                    Event(start=25, end=35, visual="The woman opens a red umbrella."),
                    Event(
                        start=35, end=60, visual="A bus arrives and the woman boards it.", speech="One ticket, please."
                    ),
                ],
            ),
        ],
        evidence=[Evidence(video=2, start=25, end=35, fact="The woman opens a red umbrella.")],
    )


# Errors a grammar over the protocol rules out; only value errors (e.g. end before start) stay possible.
SYNTAX_ERRORS = ("empty", "bad_json", "no_action", "several_objects", "unknown_tool", "missing_field", "unknown_video")


def test_one_real_episode_through_the_agent_and_the_simulator(policy, umbrella_script):
    limits = Limits(max_turns=3)  # shrunk from 20: three turns (observe, observe or answer, forced answer) suffice
    simulator = ScriptSimulator({umbrella_script.id: umbrella_script})
    result = Agent(policy, simulator, limits).run(umbrella_script.episode)

    assert 1 <= result.turns <= limits.max_turns
    assert not [s.error for s in result.steps if s.kind == "format_error" and s.error.startswith(SYNTAX_ERRORS)]
    # at the turn limit the grammar holds only the answer shape, so the episode always ends in a letter
    assert result.failure is None and result.answer in {"A", "B", "C", "D"}
    assert all(step.prompt_tokens > 0 and step.completion_tokens > 0 for step in result.steps if step.kind != "tool")
    assert policy.timings[-1]["cache_n"] > 0 or result.turns == 1  # later turns reuse the KV cache of earlier ones


def test_each_turn_is_one_compact_protocol_object(policy, umbrella_script):
    episode = umbrella_script.episode
    messages = initial_messages(episode, "json", 4)

    output = policy.act(messages, episode)
    assert "\n" not in output.content  # compact separators: fewer tokens, exact re-tokenization
    turn = parse_turn(output.content, None, episode)
    assert isinstance(turn, ParsedTurn) and turn.format == "json"

    forced = {"role": "user", "content": FORCE_ANSWER.format(answer_format="Answer with the letter."), FORCED_KEY: True}
    answer = json.loads(policy.act([*messages, forced], episode).content)
    assert answer["action"] == "answer" and answer["final_answer"] in {"A", "B", "C", "D"}


def test_the_embedded_model_can_word_the_llm_simulator(umbrella_script):
    if not WEIGHTS.is_file():
        pytest.skip(f"embedded master weights not fetched ({WEIGHTS}); run `agentcvr models`")
    from agentcvr.actions import Observe
    from agentcvr.policies.gguf import GGUFChat
    from simulator.llm_sim import LLMSimulator

    chat = GGUFChat(WEIGHTS, n_ctx=1024, max_tokens=48)  # 48 tokens: two short sentences are enough here
    simulator = LLMSimulator({umbrella_script.id: umbrella_script}, chat=chat)
    text = simulator.observe(umbrella_script.episode, Observe(video=2, start=20, end=40, focus="umbrella"))
    assert text.strip() and "umbrella" in text.lower()


def test_after_a_rejected_reply_the_policy_writes_something_else(policy, umbrella_script):
    """Greedy decoding would repeat the rejected reply word for word; the policy samples until it differs."""
    from agentcvr.prompts import RECOVER

    episode = umbrella_script.episode
    rejected = (
        '{"action": "observe", "thought": "look", "params": {"observation_targets": '
        '[{"video_index": 2, "start_time": 60, "end_time": 60}], "focus_prompt": "umbrella"}}'
    )
    messages = [
        *initial_messages(episode, "json", 6),
        {"role": "assistant", "content": rejected},
        {"role": "user", "content": RECOVER.format(error="end must be after start", hint=""), RECOVERY_KEY: True},
    ]
    output = policy.act(messages, episode)
    assert output.content != rejected
    assert isinstance(parse_turn(output.content, None, episode), ParsedTurn)  # no times after a rejection


def test_a_scanning_master_first_looks_at_every_video_whole_with_no_focus_to_copy(policy, umbrella_script, monkeypatch):
    monkeypatch.setattr(policy, "scan", True)
    episode = umbrella_script.episode
    calls = len(policy.timings)
    turn = parse_turn(policy.act(initial_messages(episode, "json", 6), episode).content, None, episode)
    assert isinstance(turn, ParsedTurn)
    assert [(a.tool, a.video, a.start, a.end) for a in turn.actions] == [("observe", 1, 0, 60), ("observe", 2, 0, 60)]
    assert [a.focus for a in turn.actions] == ["", ""]  # the loop searches for the question and its options
    assert len(policy.timings) == calls  # written for the model: no generation spent on it


def test_a_scanning_master_given_one_turn_answers_at_once(policy, umbrella_script, monkeypatch):
    """`--max-turns 1`: the first turn is the forced answer, so the scan is skipped (it used to end in turn_limit)."""
    monkeypatch.setattr(policy, "scan", True)
    table = {umbrella_script.id: umbrella_script}
    result = Agent(policy, ScriptSimulator(table), Limits(max_turns=1)).run(umbrella_script.episode)
    assert (result.turns, result.forced, result.failure, result.tool_calls) == (1, True, None, 0)
    assert result.answer in {"A", "B", "C", "D"}


def _at_the_answer(episode) -> list[dict]:
    """The conversation at the forced answer, after one look that found the umbrella in video 2."""
    forced = {"role": "user", "content": FORCE_ANSWER.format(answer_format="Answer with the letter."), FORCED_KEY: True}
    report = {
        "role": "user",
        "content": "Result of observe on video 2 [0-60 s]:\n[25.0s - 35.0s] The woman opens a red umbrella.",
    }
    return [*initial_messages(episode, "json", 4), report, forced]


def test_a_voting_master_asks_the_options_in_every_order_and_says_so(policy, umbrella_script, monkeypatch):
    monkeypatch.setattr(policy, "answer_orders", 4)
    episode = umbrella_script.episode
    before = len(policy.timings)
    output = policy.act(_at_the_answer(episode), episode)
    answer = json.loads(output.content)
    assert answer["action"] == "answer" and answer["final_answer"] in {"A", "B", "C", "D"}
    assert "answers over 4 option orders" in answer["thought"]
    assert answer["thought"].endswith(f"-> {answer['final_answer']}]")
    assert len(policy.timings) == before + 4  # the turn, then three re-asks
    assert policy.timings[-1]["cache_n"] > 0  # a re-ask reads only its own message: the rest is cached


_LOOK = (
    '{"action": "observe", "thought": "x", "params": {"observation_targets": '
    '[{"video_index": 1, "start_time": 0, "end_time": 20}], "focus_prompt": "man"}}'
)


def test_a_model_that_insists_on_a_refused_reply_is_held_to_whole_video_calls(policy, umbrella_script, monkeypatch):
    """The model is wrapped at the llama.cpp boundary so that it writes the refused reply under any grammar that allows
    times; the policy must then decode under the whole-video grammar (the real model) and send something new."""
    from agentcvr.prompts import RECOVER

    episode = umbrella_script.episode
    refused = (
        '{"action": "get_caption", "thought": "listen", "params": {"video_index": 1, "start_time": 27, "end_time": 4}}'
    )
    whole_video = {policy.grammar(episode, tools_only=False, answer_only=False, times="none")}
    real = policy.server

    class Insistent:
        def handle_chat_completions(self, request: dict, callback) -> None:  # streamed, as `completion` asks
            if request["grammar"] in whole_video:
                return real.handle_chat_completions(request, callback)
            callback({"choices": [{"delta": {"content": refused}, "finish_reason": "stop"}], "usage": {}})

    monkeypatch.setattr(policy, "server", Insistent())
    monkeypatch.setattr(policy, "scan", True)  # times required after the scan: the refused interval stays possible
    observed = {"role": "user", "content": "Result of observe on video 1 [0-60 s]:\n[0.0s - 20.0s] A man walks."}
    messages = [
        *initial_messages(episode, "json", 8),
        {"role": "assistant", "content": refused},
        {"role": "user", "content": RECOVER.format(error="end must be after start", hint=""), RECOVERY_KEY: True},
        {"role": "assistant", "content": _LOOK},
        observed,
    ]
    output = policy.act(messages, episode)
    turn = parse_turn(output.content, None, episode)
    assert output.content != refused and isinstance(turn, ParsedTurn)
    assert all(a.start == 0 for a in turn.actions if a.tool != "answer")  # whole videos


@pytest.mark.parametrize("scoring", ["cloze", "verify"])
def test_a_scoring_master_answers_the_option_whose_text_scores_best(policy, umbrella_script, monkeypatch, scoring):
    monkeypatch.setattr(policy, "answer_scoring", scoring)
    episode = umbrella_script.episode
    before = len(policy.timings)
    answer = json.loads(policy.act(_at_the_answer(episode), episode).content)
    assert answer["action"] == "answer" and answer["final_answer"] in {"A", "B", "C", "D"}
    summary = answer["thought"].rsplit("[", 1)[1]
    assert summary.startswith(f"option {scoring} scores A ") and f"-> {answer['final_answer']}; own answer " in summary
    assert len(policy.timings) == before + 5  # the turn, then one scoring request per option
    # an option reads only its own tokens: the rest is cached
    assert all(t["cache_n"] > 0 for t in list(policy.timings)[-3:])


def test_a_stopped_run_stops_the_master_mid_generation_and_frees_it(policy, umbrella_script):
    import threading

    from agentcvr import cancel
    from agentcvr.policies.gguf import EPISODES_KEPT, completion

    token, tokens = cancel.CancelToken(), []
    story = {"messages": [{"role": "user", "content": "Tell a long story about a dog."}], "max_tokens": 2000}
    story["ignore_eos"] = True  # 2000 tokens whatever the model says: far longer than the test waits

    def watch(chunk: dict) -> bool:  # a second stream, to see tokens arrive before the stop
        tokens.append(chunk)
        if len(tokens) == 20:
            token.cancel("timeout")
        return token.cancelled

    with cancel.scope(token), pytest.raises(cancel.Cancelled, match="timeout"):
        policy.server.handle_chat_completions({**story, "stream": True}, watch)
        completion(policy.server, story)  # not reached: the token is set
    assert 20 <= len(tokens) < 100  # stopped mid-generation, far from its 2000 tokens
    stopper = threading.Timer(1.0, lambda: other.cancel("cancelled"))
    other = cancel.CancelToken()
    stopper.start()
    with cancel.scope(other), pytest.raises(cancel.Cancelled, match="cancelled"):
        completion(policy.server, story)  # stopped from another thread while llama.cpp generates
    reply = completion(policy.server, {"messages": [{"role": "user", "content": "Say yes."}], "max_tokens": 3})
    assert reply["choices"][0]["message"]["content"] and reply["timings"]["predicted_n"] >= 1  # the slot is free
    for k in range(EPISODES_KEPT + 10):  # a long-lived server sees a new episode id per request
        policy._elided[f"episode-{k}"] = (0, 0)
    policy.act(initial_messages(umbrella_script.episode, "json", 4), umbrella_script.episode)
    assert len(policy._elided) <= EPISODES_KEPT and len(policy.timings) <= policy.timings.maxlen


def test_the_prompt_batch_option_sets_the_step_a_stop_waits_for():
    """`prompt_batch` reaches llama.cpp: a long prompt is read (and its progress reported, where a stop is seen) in
    steps of that many tokens."""
    if not WEIGHTS.is_file():
        pytest.skip(f"embedded master weights not fetched ({WEIGHTS}); run `agentcvr models`")
    from agentcvr.components import make_policy

    policy = make_policy(f"gguf-free:{WEIGHTS}", threads=1, prompt_batch=16)
    chunks: list[dict] = []
    request = {"messages": [{"role": "user", "content": "word " * 60}], "max_tokens": 1, "cache_prompt": False}
    request |= {"stream": True, "return_progress": True}
    policy.server.handle_chat_completions(request, lambda chunk: chunks.append(chunk) and False)
    read = [c["prompt_progress"]["processed"] for c in chunks if "prompt_progress" in c]
    steps = [b - a for a, b in itertools.pairwise(read)]
    assert len(steps) > 3 and set(steps[:-1]) == {16} and 0 < steps[-1] <= 16  # the last step reads what is left
