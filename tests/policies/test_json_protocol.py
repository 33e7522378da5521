"""The per-episode JSON schema of one protocol turn: format constraints only, one reason per row."""

import re

import pytest

from agentcvr.episode import Episode, VideoRef
from agentcvr.policies.json_protocol import answer_schema, turn_schema


def episode(task, n_options=4, n_videos=2, duration=60.0):
    return Episode(
        id="e",
        task=task,
        question="?",
        options=[f"{chr(65 + i)}. option" for i in range(n_options)],
        videos=[VideoRef(index=i + 1, duration=duration) for i in range(n_videos)],
    )


@pytest.mark.parametrize(
    ("task", "n_options", "n_videos", "valid", "invalid"),
    [
        ("NC", 4, 2, ["A", "D"], ["E", "AB", ""]),  # one of the episode's letters
        ("MOC", 3, 2, ["C"], ["D"]),  # as many letters as options
        ("BU", 3, 2, ["A", "AC", "ABC"], ["CA", "AA", "D", ""]),  # a sorted non-empty subset
        ("PSS", 0, 3, ["3->1->2", "1->2->3"], ["1->2", "4->1->2", "1,2,3"]),  # one number per segment
        ("FSA", 0, 2, ["12,20.5", "0.0,3"], ["12", "[12, 20]", "a,b"]),  # 'start,end'
    ],
)
def test_final_answer_has_the_task_format(task, n_options, n_videos, valid, invalid):
    schema = answer_schema(episode(task, n_options, n_videos))

    def accepts(text):
        if "enum" in schema:
            return text in schema["enum"]
        return re.fullmatch(schema["pattern"].strip("^$"), text) is not None

    assert all(accepts(v) for v in valid)
    assert not any(accepts(v) for v in invalid)


def test_free_form_answers_are_bounded_text_only():
    assert answer_schema(episode("CCQA", 0)) == {"type": "string", "minLength": 1, "maxLength": 600}


def test_targets_name_real_videos_inside_their_durations():
    schema = turn_schema(episode("NC", n_videos=2, duration=90.0))
    observe, get_caption, answer = schema["anyOf"]
    targets = observe["properties"]["params"]["properties"]["observation_targets"]
    shapes = targets["items"]["anyOf"]
    assert [s["properties"]["video_index"]["const"] for s in shapes] == [1, 2]
    assert shapes[0]["properties"]["end_time"] == {"type": "number", "minimum": 0, "maximum": 90.0}
    assert get_caption["properties"]["params"]["anyOf"] == shapes
    assert all(branch["additionalProperties"] is False for branch in schema["anyOf"])
    assert list(answer["properties"]) == ["action", "thought", "final_answer"]  # the order the model writes


def test_fit_context_elides_oldest_observations_first():
    from agentcvr.policies.gguf import ELIDED, fit_context

    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "question"}]
    for turn in range(6):
        messages += [{"role": "assistant", "content": f"call {turn}"}, {"role": "user", "content": f"obs {turn} " * 50}]
    fitted, elided = fit_context(messages, max_chars=1500)
    assert sum(len(m["content"]) for m in fitted) <= 0.6 * 1500  # down to the low-water mark
    assert fitted[:2] == messages[:2] and fitted[-1] == messages[-1]
    assert fitted[3]["content"] == ELIDED and fitted[-1]["content"].startswith("obs 5")
    assert elided == sum(m["content"] == ELIDED for m in fitted)
    assert fit_context(messages, max_chars=10**6) == (messages, 0)  # nothing elided when it fits


def test_fit_context_keeps_the_prompt_prefix_stable_across_turns():
    """Once observations are elided, later turns elide the same ones until the budget is hit again: the prefix the
    model has already read (its KV cache) stays valid."""
    from agentcvr.policies.gguf import fit_context

    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "question"}]
    elided, prefixes = 0, []
    for turn in range(12):
        messages += [{"role": "assistant", "content": f"call {turn}"}, {"role": "user", "content": f"obs {turn} " * 50}]
        fitted, elided = fit_context(messages, max_chars=2000, elided=elided)
        assert sum(len(m["content"]) for m in fitted) <= 2000
        prefixes.append([m["content"] for m in fitted])
    changed = sum(now[: len(before)] != before for before, now in zip(prefixes, prefixes[1:], strict=False))
    assert 1 <= changed <= 4  # eliding just enough would change the prefix on every turn past the budget
