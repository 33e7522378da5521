"""What the script teachers (expert, scan) share: reading what a conversation has looked at, and writing a turn, in
either action format (`tools` or the published `json` protocol).

Teachers decide from the conversation alone (no state of their own), so the same teacher serves many threads and
resumes anywhere. `looks` pairs every observe/listen the assistant made with the observation the loop returned, in
order: the loop answers a turn's calls in the order they were made, as tool messages (tools) or as "Result of ..."
user messages (json). A teacher's plan is a list of turns, each a list of calls; `next_calls` finds where the
conversation stands in it, and `write_turn` writes those calls as one turn. The published protocol holds one action
per turn (observe may take several videos under one focus, and, in our extension, get_caption several videos), so
there a planned turn of mixed calls takes several turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from agentcvr.actions import Listen, Observe
from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput
from agentcvr.parsing import ParseError, parse_turn
from agentcvr.session import LOOP_KEYS

Call = tuple[str, dict]  # (tool name, arguments) as the action models name them: observe/listen/answer
Protocol = Literal["tools", "json"]


@dataclass(frozen=True)
class Look:
    """One observe/listen of the conversation and what came back."""

    action: Observe | Listen
    observation: str


def looks(messages: list[dict], episode: Episode) -> list[Look]:
    """Every look the assistant made so far, with its observation, in order."""
    found: list[Look] = []
    waiting: list[Observe | Listen] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            parsed = parse_turn(message.get("content"), message.get("tool_calls"), episode)
            actions = [] if isinstance(parsed, ParseError) else parsed.actions
            waiting = [a for a in actions if isinstance(a, Observe | Listen)]
        elif waiting and (role == "tool" or (role == "user" and not any(message.get(k) for k in LOOP_KEYS))):
            found.append(Look(waiting.pop(0), str(message.get("content", ""))))
    return found


def next_calls(turns: list[list[Call]], done: int) -> list[Call]:
    """The rest of the planned turn that holds look number `done` (0-based); [] once every look was made."""
    start = 0
    for turn in turns:
        if done < start + len(turn):
            return turn[done - start :]
        start += len(turn)
    return []


def tool_call(call_id: str, name: str, arguments: dict) -> dict:
    """An OpenAI-style tool call, as a teacher writes it."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def write_turn(calls: list[Call], protocol: Protocol, call_id: str, thought: str = "") -> PolicyOutput:
    """One assistant turn making `calls` (or their first part, in the published protocol). Tool-call ids are
    `call_id` plus the call's position, so they stay unique in a conversation when `call_id` is."""
    if protocol == "tools":
        return PolicyOutput(
            tool_calls=[tool_call(f"{call_id}_{i}", name, args) for i, (name, args) in enumerate(calls)]
        )
    if protocol != "json":
        raise ValueError(f"unknown protocol {protocol!r}: use 'tools' or 'json'")
    return PolicyOutput(content=json.dumps(json_turn(calls, thought), separators=(", ", ": ")))


def json_turn(calls: list[Call], thought: str = "") -> dict:
    """The published protocol's object for the first calls: an answer, one get_caption over all the leading listen
    calls, or one observe over all the leading observe calls that share a focus."""
    name, args = calls[0]
    head = {"action": {"listen": "get_caption"}.get(name, name), **({"thought": thought} if thought else {})}
    if name == "answer":
        return {**head, "final_answer": args["answer"]}
    if name not in ("listen", "observe"):
        raise ValueError(f"unknown tool {name!r}")
    focus = args.get("focus", "")
    group = [args]
    for other_name, other in calls[1:]:
        if other_name != name or other.get("focus", "") != focus:
            break
        group.append(other)
    if name == "listen":  # one video: the published shape; several: `caption_targets` (parsing.py)
        targets = [_target(a) for a in group]
        return {**head, "params": targets[0] if len(targets) == 1 else {"caption_targets": targets}}
    return {**head, "params": {"observation_targets": [_target(a) for a in group], "focus_prompt": focus}}


def _target(args: dict) -> dict:
    target = {"video_index": args["video"]}
    if args.get("start") is not None:
        target["start_time"] = args["start"]
    if args.get("end") is not None:
        target["end_time"] = args["end"]
    if args.get("num_frames") is not None:
        target["num_frames"] = args["num_frames"]
    return target
