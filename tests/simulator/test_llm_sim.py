"""LLMSimulator against a real local chat-completions server: only the queried slice of the script goes out."""

import pytest

from agentcvr.actions import Listen, Observe
from agentcvr.openai_stub import OpenAIStub
from agentcvr.script import Event, Script, VideoScript
from simulator.llm_sim import LLMSimulator
from simulator.script_sim import NO_VISUAL


@pytest.fixture
def stub():
    with OpenAIStub() as server:
        yield server


@pytest.fixture
def secret_script() -> Script:
    """Events before and after the queried interval carry marker words that must never be sent."""
    return Script(
        id="slice-1",
        task="NC",
        question="QUESTION-MARKER: what does the chef add?",
        options=["A. OPTION-MARKER salt", "B. sugar"],
        answer="A",
        videos=[
            VideoScript(
                index=1,
                duration=60,
                events=[
                    Event(start=0, end=10, visual="EARLY-MARKER a chef washes pans"),
                    Event(start=12, end=30, visual="the chef adds salt to the soup", speech="a pinch of salt"),
                    Event(start=40, end=60, visual="LATE-MARKER the chef serves the soup"),
                ],
            ),
            VideoScript(index=2, duration=30, events=[Event(start=0, end=30, visual="OTHER-VIDEO-MARKER a cat")]),
        ],
    )


def sim(stub, script, **options):
    return LLMSimulator({script.id: script}, base_url=stub.base_url, model="sim-model", **options)


def test_the_request_holds_only_the_clipped_slice_and_the_focus(stub, secret_script):
    stub.reply(content="[15.0s - 30.0s] A cook sprinkles salt into a pot of soup.")
    observe = Observe(video=1, start=15, end=35, focus="what is added")

    text = sim(stub, secret_script).observe(secret_script.episode, observe)

    assert text == "[15.0s - 30.0s] A cook sprinkles salt into a pot of soup."
    (request,) = stub.requests
    sent = "\n".join(m["content"] for m in request["messages"])
    assert "[15.0s - 30.0s] the chef adds salt to the soup" in sent  # clipped to the interval
    assert "what is added" in sent
    for marker in ("EARLY", "LATE", "OTHER-VIDEO", "QUESTION", "OPTION", "pinch"):  # no leak, speech not shown
        assert marker not in sent
    assert request["model"] == "sim-model"
    assert "never mention the notes or a script" in request["messages"][0]["content"]


def test_an_empty_interval_is_answered_without_a_call(stub, secret_script):
    text = sim(stub, secret_script).observe(secret_script.episode, Observe(video=1, start=31, end=39))
    assert text == NO_VISUAL and stub.requests == []


def test_listen_returns_the_script_speech_without_an_llm(stub, secret_script):
    text = sim(stub, secret_script).listen(secret_script.episode, Listen(video=1, start=0, end=60))
    assert text == "[12.0 - 30.0]: a pinch of salt" and stub.requests == []


def test_replies_are_cached_on_disk_across_instances(stub, secret_script, tmp_path):
    cache = tmp_path / "sim-cache.jsonl"
    stub.reply(content="A cook adds salt.")
    observe = Observe(video=1, start=12, end=30, focus="salt")

    first = sim(stub, secret_script, cache_path=cache)
    assert first.observe(secret_script.episode, observe) == "A cook adds salt."
    assert first.observe(secret_script.episode, observe) == "A cook adds salt."
    again = sim(stub, secret_script, cache_path=cache)  # a new process would read the same file
    assert again.observe(secret_script.episode, observe) == "A cook adds salt."
    assert len(stub.requests) == 1 and again.chat.hits == 1
    # another focus is another request
    stub.reply(content="A pot on a stove.")
    assert again.observe(secret_script.episode, observe.model_copy(update={"focus": "pot"})) == "A pot on a stove."


class EchoChat:
    """An in-process backend (the role GGUFChat plays): records messages, returns a fixed text."""

    name = "echo"

    def __init__(self):
        self.seen = []

    def __call__(self, messages, json_schema=None):
        self.seen.append(messages)
        return "  "  # an empty reply falls back to the slice itself


def test_an_injected_backend_gets_the_same_slice(secret_script):
    chat = EchoChat()
    simulator = LLMSimulator({secret_script.id: secret_script}, chat=chat)
    text = simulator.observe(secret_script.episode, Observe(video=1, start=0, end=12))
    assert text == "[0.0s - 10.0s] EARLY-MARKER a chef washes pans"
    assert "LATE-MARKER" not in chat.seen[0][1]["content"]


def test_without_a_backend_or_url_it_says_what_is_missing(secret_script):
    with pytest.raises(ValueError, match="base_url and model"):
        LLMSimulator({secret_script.id: secret_script})
