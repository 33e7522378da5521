"""The one parser: three formats in, an action list or a typed error out; never an exception."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcvr.actions import Answer, Listen, Observe
from agentcvr.episode import Episode, VideoRef
from agentcvr.parsing import ErrorCode, ParsedTurn, ParseError, parse_turn

EPISODE = Episode(
    id="e",
    task="NC",
    question="?",
    videos=[VideoRef(index=1, duration=60), VideoRef(index=2, duration=30)],
)


def call(name, args, call_id="c1", as_text=True):
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args) if as_text else args},
    }


def test_openai_tool_calls():
    turn = parse_turn(None, [call("observe", {"video": 2, "start": 1, "end": 9, "focus": "dog"})], EPISODE)
    assert isinstance(turn, ParsedTurn) and turn.format == "tool_calls" and turn.call_ids == ["c1"]
    assert turn.actions == [Observe(video=2, start=1, end=9, focus="dog")]


def test_qwen_text_with_several_calls_and_think():
    text = (
        "<think>look at both</think>"
        '<tool_call>{"name": "listen", "arguments": {"video": 1, "start": 0, "end": 60}}</tool_call>\n'
        '<tool_call>{"name": "observe", "arguments": {"video": 2, "start": 0, "end": 30}}</tool_call>'
    )
    turn = parse_turn(text, None, EPISODE)
    assert isinstance(turn, ParsedTurn) and turn.format == "qwen"
    assert turn.actions == [Listen(video=1, start=0, end=60), Observe(video=2, start=0, end=30)]


def test_published_protocol_observe_with_two_targets():
    obj = {
        "action": "observe",
        "thought": "compare",
        "params": {
            "observation_targets": [
                {"video_index": 1, "start_time": 0, "end_time": 10, "num_frames": 8},
                {"video_index": 2, "start_time": 5, "end_time": 15},
            ],
            "focus_prompt": "the knife",
        },
    }
    turn = parse_turn(json.dumps(obj), None, EPISODE)
    assert isinstance(turn, ParsedTurn) and turn.format == "json" and turn.thought == "compare"
    assert turn.actions == [
        Observe(video=1, start=0, end=10, focus="the knife", num_frames=8),
        Observe(video=2, start=5, end=15, focus="the knife"),
    ]


def test_published_protocol_caption_without_times_covers_the_video():
    turn = parse_turn('{"action": "get_caption", "params": {"video_index": 2}}', None, EPISODE)
    assert isinstance(turn, ParsedTurn) and turn.actions == [Listen(video=2, start=0, end=30)]


def test_caption_targets_listen_to_several_videos_in_one_turn():
    obj = {
        "action": "get_caption",
        "params": {"caption_targets": [{"video_index": 1}, {"video_index": 2, "end_time": 9}]},
    }
    turn = parse_turn(json.dumps(obj), None, EPISODE)
    assert isinstance(turn, ParsedTurn) and turn.actions == [
        Listen(video=1, start=0, end=60),
        Listen(video=2, start=0, end=9),
    ]
    for bad in ([], [3], "1"):
        error = parse_turn(json.dumps({"action": "get_caption", "params": {"caption_targets": bad}}), None, EPISODE)
        assert isinstance(error, ParseError) and "target" in error.message


@pytest.mark.parametrize(
    ("final", "expected"),
    [("C", "C"), ("AC", "AC"), ("2->4->3->1", "2->4->3->1"), ([53.2, 57.8], "53.2,57.8")],
)
def test_published_protocol_answers(final, expected):
    turn = parse_turn(json.dumps({"action": "answer", "thought": "", "final_answer": final}), None, EPISODE)
    assert isinstance(turn, ParsedTurn) and turn.actions == [Answer(answer=expected)]


def test_prose_and_code_fences_around_one_json_object_are_accepted():
    text = 'Sure! Here is my action:\n```json\n{"action": "answer", "final_answer": "B"}\n```\nHope it helps.'
    turn = parse_turn(text, None, EPISODE)
    assert isinstance(turn, ParsedTurn) and turn.actions == [Answer(answer="B")]


@pytest.mark.parametrize(
    ("content", "tool_calls"),
    [
        (None, [call("observe", {"video": 2, "focus": "the knife"})]),
        ('<tool_call>{"name": "observe", "arguments": {"video": 2, "focus": "the knife"}}</tool_call>', None),
        # OpenAI style: arguments as a JSON string, as small models write it inside <tool_call> text too
        (
            '<tool_call>{"name": "observe", "arguments": "{\\"video\\": 2, \\"focus\\": \\"the knife\\"}"}</tool_call>',
            None,
        ),
        (
            '{"action": "observe", "params": {"observation_targets": [{"video_index": 2}], '
            '"focus_prompt": "the knife"}}',
            None,
        ),
    ],
)
def test_omitted_times_mean_the_whole_video_in_every_protocol(content, tool_calls):
    turn = parse_turn(content, tool_calls, EPISODE)
    assert isinstance(turn, ParsedTurn), turn
    assert turn.actions == [Observe(video=2, start=0, end=30, focus="the knife")]


@pytest.mark.parametrize(
    ("arguments", "interval"),
    [
        ({"video": 2, "start": 12}, (12, 30)),
        ({"video": 2, "end": 8}, (0, 8)),
        ({"video": 2, "start": 3, "end": 9}, (3, 9)),
    ],
)
def test_one_time_given_keeps_it_and_fills_the_other(arguments, interval):
    turn = parse_turn(None, [call("listen", arguments)], EPISODE)
    assert isinstance(turn, ParsedTurn) and (turn.actions[0].start, turn.actions[0].end) == interval


def test_an_impossible_interval_names_the_fix():
    error = parse_turn(None, [call("observe", {"video": 2, "start": 30, "end": 30})], EPISODE)
    assert isinstance(error, ParseError) and "Leave out both times" in error.message


def test_end_just_past_the_duration_is_clamped():
    turn = parse_turn(None, [call("listen", {"video": 2, "start": 0, "end": 30.4})], EPISODE)
    assert isinstance(turn, ParsedTurn) and turn.actions[0].end == 30
    assert turn.actions[0].asked_end is None  # the rounding of durations, nothing to tell


def test_a_window_running_past_the_end_is_cut_there_and_the_asked_end_kept():
    """Windows sized for a longer video: each that starts inside this one is looked at up to its end, none refused."""
    windows = [call("observe", {"video": 2, "start": a, "end": a + 25}, call_id=f"c{a}") for a in (0, 25)]
    turn = parse_turn(None, windows, EPISODE)
    assert isinstance(turn, ParsedTurn)
    assert [(a.start, a.end, a.asked_end) for a in turn.actions] == [(0, 25, None), (25, 30, 50)]
    assert "asked_end" not in turn.actions[1].model_dump()  # not a tool argument: never recorded as one


@pytest.mark.parametrize(
    ("content", "tool_calls", "code"),
    [
        ("", None, ErrorCode.EMPTY),
        ("I think the answer is B", None, ErrorCode.NO_ACTION),
        ('{"action": "observe", "params": {', None, ErrorCode.BAD_JSON),
        (
            '{"action": "answer", "final_answer": "A"} {"action": "answer", "final_answer": "B"}',
            None,
            ErrorCode.SEVERAL_OBJECTS,
        ),
        ('{"action": "zoom", "params": {}}', None, ErrorCode.UNKNOWN_TOOL),
        (None, [call("search", {"q": "x"})], ErrorCode.UNKNOWN_TOOL),
        (None, [call("observe", {"start": 0, "end": 3})], ErrorCode.MISSING_FIELD),
        (None, [call("observe", {"video": True})], ErrorCode.INVALID_VALUE),
        ('{"action": "get_caption", "params": {"video_index": true}}', None, ErrorCode.INVALID_VALUE),
        (None, [call("listen", {"video": 1, "end": 0})], ErrorCode.OUTSIDE_VIDEO),
        (None, [call("observe", {"video": 1, "start": 9, "end": 3})], ErrorCode.END_BEFORE_START),
        (None, [call("observe", {"video": 3, "start": 0, "end": 3})], ErrorCode.UNKNOWN_VIDEO),
        (None, [call("listen", {"video": 2, "start": 30, "end": 90})], ErrorCode.OUTSIDE_VIDEO),
        (None, [call("listen", {"video": 2, "start": 31, "end": 40})], ErrorCode.OUTSIDE_VIDEO),
        (None, [call("listen", {"video": 1, "start": -3, "end": 4})], ErrorCode.INVALID_VALUE),
        (None, [{"id": "x", "function": {"name": "listen", "arguments": "{nope"}}], ErrorCode.BAD_JSON),
        (
            '<tool_call>{"name": "listen", "arguments": {"video": 1, "start": 0, "end": NaN}}</tool_call>',
            None,
            ErrorCode.INVALID_VALUE,
        ),
        ('{"action": "answer"}', None, ErrorCode.MISSING_FIELD),
        (
            '<tool_call>{"name": "answer", "arguments": {"answer": "A"}}</tool_call>'
            '<tool_call>{"name": "listen", "arguments": {"video": 1, "start": 0, "end": 5}}</tool_call>',
            None,
            ErrorCode.SEVERAL_OBJECTS,
        ),
    ],
)
def test_errors_are_typed_and_say_what_is_wrong(content, tool_calls, code):
    result = parse_turn(content, tool_calls, EPISODE)
    assert isinstance(result, ParseError), result
    assert result.code == code
    assert result.message  # the text the loop re-prompts with


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
keys = st.sampled_from(
    [
        "action",
        "params",
        "final_answer",
        "observation_targets",
        "video_index",
        "start_time",
        "end_time",
        "name",
        "arguments",
        "video",
        "start",
        "end",
        "focus",
        "answer",
        "function",
    ]
)
shaped = st.recursive(
    json_values,
    lambda inner: st.dictionaries(keys, inner, max_size=6) | st.lists(inner, max_size=3),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_text_never_raises(text):
    assert isinstance(parse_turn(text, None, EPISODE), ParsedTurn | ParseError)


@pytest.mark.slow  # 400 hypothesis examples, ~10 s
@settings(max_examples=400, deadline=None)
@given(shaped)
def test_fuzz_json_shaped_input_never_raises(value):
    for content in (json.dumps(value), f"<tool_call>{json.dumps(value)}</tool_call>", f"prose {json.dumps(value)}"):
        assert isinstance(parse_turn(content, None, EPISODE), ParsedTurn | ParseError)


@pytest.mark.slow  # 300 hypothesis examples, ~8 s
@settings(max_examples=300, deadline=None)
@given(shaped)
def test_fuzz_tool_calls_never_raise(value):
    for tool_calls in ([value], value, [{"function": value}], [{"function": {"name": "observe", "arguments": value}}]):
        assert isinstance(parse_turn(None, tool_calls, EPISODE), ParsedTurn | ParseError)
