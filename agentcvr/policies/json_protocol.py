"""The JSON schema of one turn of the published AgentCVR protocol, for grammar-constrained decoding.

`turn_schema(episode)` is an `anyOf` over the three object shapes of `prompts.SYSTEM_JSON` (observe, get_caption,
answer). It constrains the *format* only, so that a small model cannot emit an action the parser would reject:
video indices run 1..n, times lie inside that video, and the final answer has the task's answer format (one of the
episode's option letters, a subset of them for multi-select, an ordering of the segment numbers, 'start,end'). It
never narrows the choice among well-formed answers.

    >>> schema = turn_schema(_demo())
    >>> [branch["properties"]["action"]["const"] for branch in schema["anyOf"]]
    ['observe', 'get_caption', 'answer']
    >>> answer_schema(_demo())
    {'type': 'string', 'enum': ['A', 'B', 'C']}
"""

from __future__ import annotations

import json
from itertools import combinations
from typing import Any, Literal

from agentcvr.episode import Episode, VideoRef
from agentcvr.policies.scan_teacher import SCAN_THOUGHT
from agentcvr.policies.teaching import json_turn

LETTER_TASKS = frozenset({"NC", "CC", "PEA", "PI", "MSR", "MOC"})
MAX_TARGETS = 4  # observation targets in one observe call (side-by-side comparison)


Times = Literal["optional", "required", "none"]


def turn_schema(
    episode: Episode, thought_chars: int = 120, focus_chars: int = 160, times: Times = "optional"
) -> dict[str, Any]:
    """The schema of one assistant turn for this episode; lengths cap the free-text fields (in characters).
    `times` of observation targets: "optional" (left out: the whole video), "required" (zooming in, after a scan),
    "none" (whole videos only: a call a small model cannot get wrong). get_caption's times stay optional."""
    thought = {"type": "string", "maxLength": thought_chars}
    targets = [_target(video, times) for video in episode.videos]
    captions = [_target(video, "none" if times == "none" else "optional") for video in episode.videos]
    observe = _object(
        action="observe",
        thought=thought,
        params=_object(
            observation_targets={
                "type": "array",
                "items": targets[0] if len(targets) == 1 else {"anyOf": targets},
                "minItems": 1,
                "maxItems": min(MAX_TARGETS, max(2, len(targets))),
            },
            focus_prompt={"type": "string", "maxLength": focus_chars},
        ),
    )
    get_caption = _object(
        action="get_caption",
        thought=thought,
        params=captions[0] if len(captions) == 1 else {"anyOf": captions},
    )
    answer = _object(action="answer", thought=thought, final_answer=answer_schema(episode))
    return {"anyOf": [observe, get_caption, answer]}


def scan_turn(episode: Episode) -> str:
    """The first turn of a master that scans before it zooms in: one whole-video observe of every video with an empty
    focus, so the loop looks for what the question and its options name. Written for the model, not by it: the 1.5B's
    own focus prompts are vague ("any actions that do not make sense"), and a vague focus brings back arbitrary events
    of a whole video (with the question and options as the focus a scan holds 80 % of the evidence facts, with the
    question alone 74 %)."""
    calls = [("observe", {"video": video.index}) for video in episode.videos]
    return json.dumps(json_turn(calls, SCAN_THOUGHT), separators=(", ", ": "))


def answer_schema(episode: Episode) -> dict[str, Any]:
    """The format of `final_answer` for the episode's task kind."""
    letters = [chr(ord("A") + i) for i in range(len(episode.options))]
    if episode.task in LETTER_TASKS and letters:
        return {"type": "string", "enum": letters}
    if episode.task == "BU" and letters:
        subsets = ["".join(c) for k in range(1, len(letters) + 1) for c in combinations(letters, k)]
        return {"type": "string", "enum": subsets}
    if episode.task == "PSS":
        n = len(episode.videos)
        return {"type": "string", "pattern": f"^[1-{n}](->[1-{n}]){{{n - 1}}}$"} if 1 < n <= 9 else {"type": "string"}
    if episode.task == "FSA":
        return {"type": "string", "pattern": r"^[0-9]{1,5}(\.[0-9])?,[0-9]{1,5}(\.[0-9])?$"}
    return {"type": "string", "minLength": 1, "maxLength": 600}


def _target(video: VideoRef, times: Times) -> dict[str, Any]:
    if times == "none":
        return _object(video_index={"const": video.index})
    seconds = {"type": "number", "minimum": 0, "maximum": round(video.duration, 1)}
    optional = 2 if times == "optional" else 0
    return _object(video_index={"const": video.index}, start_time=seconds, end_time=seconds, optional=optional)


def _object(action: str | None = None, optional: int = 0, **properties: Any) -> dict[str, Any]:
    """A closed object with these properties in this order (the order the model writes them); all required but the
    last `optional` ones."""
    if action is not None:
        properties = {"action": {"const": action}, **properties}
    names = list(properties)
    return {
        "type": "object",
        "properties": properties,
        "required": names[: len(names) - optional],
        "additionalProperties": False,
    }


def _demo() -> Episode:
    return Episode(
        id="demo", task="NC", question="?", options=["A. x", "B. y", "C. z"], videos=[VideoRef(index=1, duration=60)]
    )
