"""Episodes as training data: GRPO prompt rows, and the expert's own conversations for the warm start.

An expert trajectory is the conversation of the real agent loop (`Agent(ExpertPolicy, ScriptSimulator).converse`):
the same messages, truncation, repeated-call notes and forced-answer prompt as a GRPO rollout, which runs the same
loop. The only change is of form: the chat template wants tool-call arguments as objects, not JSON strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from agentcvr.agent import Agent
from agentcvr.episode import Episode
from agentcvr.interfaces import Limits, Perception, Policy
from agentcvr.script import Script
from agentcvr.session import LOOP_KEYS, EpisodeRules
from agentcvr.trace import EpisodeResult


def prompt_messages(episode: Episode, limits: Limits, protocol: str = "tools") -> list[dict]:
    """The messages the agent loop starts an episode with."""
    return EpisodeRules(episode, None, limits, protocol).initial_messages()  # type: ignore[arg-type]


def prompt_rows(scripts: Iterable[Script], limits: Limits, protocol: str = "tools") -> list[dict]:
    """GRPO dataset rows: the prompt plus the columns the rollout function and the rewards read."""
    rows = []
    for s in scripts:
        rows.append({"prompt": prompt_messages(s.episode, limits, protocol), "episode_id": s.id, "task": s.task})
    return rows


def for_template(messages: list[dict]) -> list[dict]:
    """The agent's messages as the chat template takes them: tool-call arguments as objects, whole seconds as
    integers (`75`, not `75.0`: fewer digit tokens for the policy to get right)."""
    out = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            calls = [{**c, "function": {**c["function"], "arguments": _arguments(c["function"])}} for c in calls]
            message = {**message, "tool_calls": calls}
        out.append({k: v for k, v in message.items() if k not in LOOP_KEYS})
    return out


def _arguments(function: dict) -> dict:
    arguments = function.get("arguments") or {}
    if isinstance(arguments, str):
        arguments = json.loads(arguments)
    return {k: _compact(v) for k, v in arguments.items()}


def _compact(value):
    return int(value) if isinstance(value, float) and value.is_integer() else value


def teacher_conversations(
    scripts: Iterable[Script], policy: Policy, perception: Perception, limits: Limits
) -> tuple[list[list[dict]], list[EpisodeResult]]:
    """Run the teacher (expert or scan) through the agent loop on each script; conversations of the answered
    episodes, and all results."""
    agent = Agent(policy, perception, limits)
    conversations, results = [], []
    for script in scripts:
        result, messages = agent.converse(script.episode)
        results.append(result)
        if result.answer is not None:
            conversations.append(for_template(messages))
    return conversations, results


def scripts_by_id(scripts: Iterable[Script]) -> dict[str, Script]:
    table = {}
    for script in scripts:
        if script.id in table:
            raise ValueError(f"duplicate script id {script.id!r}")
        table[script.id] = script
    return table


def episodes_by_id(scripts: Mapping[str, Script]) -> dict[str, Episode]:
    return {key: script.episode for key, script in scripts.items()}
