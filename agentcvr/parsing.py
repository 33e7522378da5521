"""One parser for every way a policy can express an action.

Accepted, in this order:
1. OpenAI `tool_calls` (a list of `{"id", "function": {"name", "arguments"}}`),
2. Qwen-style text: one or more `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks,
3. the published AgentCVR JSON protocol: one object per turn, `{"action": "observe" | "get_caption" | "answer", ...}`
   (see shared/notes/agentcvr-reference.md), also a bare `{"name", "arguments"}` object.

`parse_turn` never raises on model output: it returns a `ParsedTurn` or a `ParseError` whose message is what the
loop tells the model when it re-prompts.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from agentcvr.actions import TOOL_MODELS, Action, Answer, Listen, Observe
from agentcvr.episode import Episode

# Seconds an interval may run past the end of a video before it counts as outside (durations are rounded).
END_TOLERANCE = 1.0

# What a model that wrote an impossible interval should do instead (small models repeat a rejected call otherwise).
WHOLE_VIDEO_FIX = "Leave out both times to look at the whole video, or give an end after the start."

Format = Literal["tool_calls", "qwen", "json"]
_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class ErrorCode(StrEnum):
    EMPTY = "empty"
    BAD_JSON = "bad_json"
    NO_ACTION = "no_action"
    SEVERAL_OBJECTS = "several_objects"
    UNKNOWN_TOOL = "unknown_tool"
    MISSING_FIELD = "missing_field"
    INVALID_VALUE = "invalid_value"
    END_BEFORE_START = "end_before_start"
    OUTSIDE_VIDEO = "interval_outside_video"
    UNKNOWN_VIDEO = "unknown_video"


class ParseError(BaseModel):
    """Why an output is not a valid action, worded for the model."""

    code: ErrorCode
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class ParsedTurn(BaseModel):
    """The actions of one assistant turn, the format they came in and their tool-call ids (None for text)."""

    actions: list[Action]
    format: Format
    call_ids: list[str | None]
    thought: str = ""


def parse_turn(content: Any, tool_calls: Any = None, episode: Episode | None = None) -> ParsedTurn | ParseError:
    """Turn raw policy output into validated actions, or a `ParseError` saying what is wrong."""
    if tool_calls:
        parsed = _parse_tool_calls(tool_calls, episode)
        if isinstance(parsed, ParsedTurn) and isinstance(content, str):  # the text beside the calls is the thought
            parsed.thought = _THINK.sub("", content).strip()
        return parsed
    if not isinstance(content, str) or not content.strip():
        return ParseError(
            code=ErrorCode.EMPTY, message="The reply was empty. Call one tool: observe, listen or answer."
        )
    text = _THINK.sub("", content).strip()
    blocks = [m.group(1) for m in _TOOL_CALL.finditer(text)]
    if blocks:
        parsed = _parse_qwen_blocks(blocks, episode)
        if isinstance(parsed, ParsedTurn):
            parsed.thought = _TOOL_CALL.sub("", text).strip()
        return parsed
    return _parse_json_protocol(text, episode)


def _parse_tool_calls(tool_calls: Any, episode: Episode | None) -> ParsedTurn | ParseError:
    if not isinstance(tool_calls, list):
        return ParseError(code=ErrorCode.BAD_JSON, message="tool_calls must be a list of function calls.")
    actions, ids = [], []
    for call in tool_calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            return ParseError(code=ErrorCode.BAD_JSON, message="Each tool call needs a 'function' object.")
        result = build_action(function.get("name"), function.get("arguments", {}), episode)
        if isinstance(result, ParseError):
            return result
        actions.append(result)
        call_id = call.get("id")
        ids.append(call_id if isinstance(call_id, str) else None)
    return _one_answer_rule(ParsedTurn(actions=actions, format="tool_calls", call_ids=ids))


def _parse_qwen_blocks(blocks: list[str], episode: Episode | None) -> ParsedTurn | ParseError:
    actions = []
    for block in blocks:
        loaded = _loads(block.strip())
        if isinstance(loaded, ParseError):
            return loaded
        if not isinstance(loaded, dict):
            return ParseError(
                code=ErrorCode.BAD_JSON, message='A <tool_call> must hold {"name": ..., "arguments": {...}}.'
            )
        result = build_action(loaded.get("name"), loaded.get("arguments", {}), episode)
        if isinstance(result, ParseError):
            return result
        actions.append(result)
    return _one_answer_rule(ParsedTurn(actions=actions, format="qwen", call_ids=[None] * len(actions)))


def _parse_json_protocol(text: str, episode: Episode | None) -> ParsedTurn | ParseError:
    fenced = _FENCE.findall(text)
    objects = _json_objects(fenced[0] if len(fenced) == 1 else text)
    if not objects:
        if "{" in text:
            return ParseError(
                code=ErrorCode.BAD_JSON, message="The JSON could not be parsed. Reply with one valid JSON object."
            )
        return ParseError(code=ErrorCode.NO_ACTION, message="No action found. Reply with one valid JSON object.")
    if len(objects) > 1:
        return ParseError(code=ErrorCode.SEVERAL_OBJECTS, message="Reply with exactly one JSON object per turn.")
    obj = objects[0]
    thought = obj.get("thought") if isinstance(obj.get("thought"), str) else ""
    if "name" in obj and "action" not in obj:
        result = build_action(obj.get("name"), obj.get("arguments", {}), episode)
        actions = [result] if not isinstance(result, ParseError) else result
    else:
        actions = _reference_actions(obj, episode)
    if isinstance(actions, ParseError):
        return actions
    return ParsedTurn(actions=actions, format="json", call_ids=[None] * len(actions), thought=thought)


def _reference_actions(obj: dict, episode: Episode | None) -> list[Action] | ParseError:
    """The published protocol: observe (several targets allowed), get_caption, answer. get_caption also takes
    `caption_targets` (a list shaped like observe's targets: several videos in one turn), which the published one
    does not: one video a turn spends a 4-turn budget before a four-video dialogue task is heard."""
    name = obj.get("action")
    params = obj.get("params", {})
    if not isinstance(params, dict):
        return ParseError(code=ErrorCode.INVALID_VALUE, message="'params' must be an object.")
    if name == "answer":
        if "final_answer" not in obj and "answer" not in params:
            return ParseError(code=ErrorCode.MISSING_FIELD, message="The answer action needs 'final_answer'.")
        answer = obj.get("final_answer", params.get("answer"))
        result = build_action("answer", {"answer": answer}, episode)
        return result if isinstance(result, ParseError) else [result]
    if name == "get_caption":
        if "caption_targets" in params:  # our extension: several videos in one turn, as observe's targets
            return _targets(params, "caption_targets", "listen", {}, episode)
        return _targets({"targets": [params]}, "targets", "listen", {}, episode)
    if name == "observe":
        focus = params.get("focus_prompt", "")
        shared = {"focus": focus if isinstance(focus, str) else ""}
        return _targets(params, "observation_targets", "observe", shared, episode)
    return ParseError(
        code=ErrorCode.UNKNOWN_TOOL,
        message=f"Unknown action {name!r}: use 'observe', 'get_caption' or 'answer'.",
    )


def _targets(params: dict, field: str, tool: str, shared: dict, episode: Episode | None) -> list[Action] | ParseError:
    """One `tool` action per target object in `params[field]` (`video_index`, optional `start_time`/`end_time`,
    observe's `num_frames`), each with the `shared` arguments."""
    targets = params.get(field)
    if not isinstance(targets, list) or not targets:
        return ParseError(code=ErrorCode.MISSING_FIELD, message=f"{tool} needs a non-empty '{field}' list of targets.")
    actions: list[Action] = []
    for target in targets:
        if not isinstance(target, dict):
            return ParseError(code=ErrorCode.INVALID_VALUE, message="Each target must be an object.")
        args = {"video": target.get("video_index"), "start": target.get("start_time"), "end": target.get("end_time")}
        if tool == "observe" and "num_frames" in target:
            args["num_frames"] = target["num_frames"]
        result = build_action(tool, args | shared, episode)
        if isinstance(result, ParseError):
            return result
        actions.append(result)
    return actions


def build_action(name: Any, arguments: Any, episode: Episode | None = None) -> Action | ParseError:
    """Validate one named tool call against the action models and, when given, the episode's videos."""
    if name == "get_caption":
        name = "listen"
    model = TOOL_MODELS.get(name) if isinstance(name, str) else None
    if model is None:
        return ParseError(
            code=ErrorCode.UNKNOWN_TOOL, message=f"Unknown tool {name!r}: use one of {', '.join(TOOL_MODELS)}."
        )
    if isinstance(arguments, str):  # OpenAI style: the arguments as a JSON string, also inside <tool_call> text
        arguments = _loads(arguments) if arguments.strip() else {}
        if isinstance(arguments, ParseError):
            return arguments
    if not isinstance(arguments, dict):
        return ParseError(code=ErrorCode.BAD_JSON, message=f"The arguments of {name} must be a JSON object.")
    arguments = {k: v for k, v in arguments.items() if k != "tool"}
    try:
        action = model.model_validate(arguments)
    except ValidationError as error:
        return _validation_error(name, error)
    if episode is not None and isinstance(action, Observe | Listen):
        return _check_against_episode(action, episode)
    return action


def _validation_error(name: str, error: ValidationError) -> ParseError:
    first = error.errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or name
    if first["type"] == "missing":
        return ParseError(code=ErrorCode.MISSING_FIELD, message=f"{name} is missing the field '{field}'.")
    message = str(first.get("msg", "invalid value"))
    if "must be after start" in message:
        return ParseError(
            code=ErrorCode.END_BEFORE_START,
            message=f"{name}: {message.removeprefix('Value error, ')}. {WHOLE_VIDEO_FIX}",
        )
    return ParseError(code=ErrorCode.INVALID_VALUE, message=f"{name}: field '{field}': {message}.")


def _check_against_episode(action: Observe | Listen, episode: Episode) -> Action | ParseError:
    """The action with its interval filled in (omitted times: the whole video) and cut at the video's end.

    An interval that starts inside the video and runs past its end is looked at up to the end (the observation says
    so, `session.cut_note`): a small model writes windows sized for a longer video, and refusing the whole call lost
    the windows that were right with the one that ran over. One that starts at or after the end is refused."""
    if not 1 <= action.video <= len(episode.videos):
        return ParseError(
            code=ErrorCode.UNKNOWN_VIDEO,
            message=f"Unknown video {action.video}: this question has videos 1 to {len(episode.videos)}.",
        )
    duration = episode.video(action.video).duration
    start, end = action.within(duration)
    if start >= duration or end <= start:
        return ParseError(
            code=ErrorCode.OUTSIDE_VIDEO,
            message=f"Interval {start:g}-{end:g} s is outside video {action.video} (0 to {duration:g} s). "
            f"{WHOLE_VIDEO_FIX}",
        )
    return action.cut_at(duration, tolerance=END_TOLERANCE)


def _one_answer_rule(turn: ParsedTurn) -> ParsedTurn | ParseError:
    answers = [a for a in turn.actions if isinstance(a, Answer)]
    if answers and len(turn.actions) > 1:
        return ParseError(code=ErrorCode.SEVERAL_OBJECTS, message="Call answer alone, after your last observe/listen.")
    return turn


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return ParseError(code=ErrorCode.BAD_JSON, message="The tool arguments are not valid JSON.")


def _json_objects(text: str) -> list[dict]:
    """Every top-level JSON object embedded in text (prose around them is ignored)."""
    decoder = json.JSONDecoder()
    objects, position = [], 0
    while (start := text.find("{", position)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            position = start + 1
            continue
        if isinstance(value, dict):
            objects.append(value)
        position = end
    return objects
