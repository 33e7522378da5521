"""Episodes as training data: GRPO prompt rows, and expert trajectories as chat conversations for the warm start.

An expert trajectory is produced by the real agent loop (`Agent(ExpertPolicy, ScriptSimulator)`), then its actions are
replayed through `CVREnvironment` so that every tool message is byte-for-byte what the GRPO rollouts will see (same
truncation, same turn-limit notice, same "Answer recorded." after the answer, and the empty assistant turn that closes
the episode).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agentcvr import prompts
from agentcvr.agent import Agent
from agentcvr.episode import Episode
from agentcvr.protocols import Limits, Perception, Policy
from agentcvr.trace import EpisodeResult
from scripts_gen.schema import Script
from train.environment import CVREnvironment

_ENV_ARGUMENTS = {
    "observe": ("video", "start", "end", "focus"),
    "listen": ("video", "start", "end"),
    "answer": ("answer",),
}


def prompt_messages(episode: Episode, limits: Limits) -> list[dict]:
    """System + user messages of an episode, exactly as the agent loop starts it (protocol `tools`)."""
    return prompts.initial_messages(episode, "tools", limits.max_turns)


def prompt_rows(scripts: Iterable[Script], limits: Limits) -> list[dict]:
    """GRPO dataset rows: the prompt plus the columns `reset` and the rewards read."""
    return [{"prompt": prompt_messages(s.episode(), limits), "episode_id": s.id, "task": s.task} for s in scripts]


def conversation(episode: Episode, result: EpisodeResult, perception: Perception, limits: Limits) -> list[dict] | None:
    """The chat messages of a finished episode, replayed through the training environment; None if it never answered."""
    if result.answer is None:
        return None
    env = CVREnvironment({episode.id: episode}, perception, limits)
    env.reset(episode_id=episode.id)
    messages = prompt_messages(episode, limits)
    turns: dict[int, list] = {}
    for step in result.steps:
        if step.kind in ("tool", "answer"):
            turns.setdefault(step.turn, []).append(step)
    for turn in sorted(turns):
        calls, results = [], []
        for step in turns[turn]:
            arguments = {k: _compact(step.arguments[k]) for k in _ENV_ARGUMENTS[step.tool] if k in step.arguments}
            calls.append({"type": "function", "function": {"name": step.tool, "arguments": arguments}})
            results.append({"role": "tool", "name": step.tool, "content": getattr(env, step.tool)(**arguments)})
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        messages.extend(results)
    messages.append({"role": "assistant", "content": ""})  # the close after "Answer recorded."
    return messages


def _compact(value):
    """Whole-second times as integers (`75`, not `75.0`): fewer digit tokens for the policy to get right."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def expert_conversations(
    scripts: Iterable[Script], policy: Policy, perception: Perception, limits: Limits
) -> tuple[list[list[dict]], list[EpisodeResult]]:
    """Run the expert through the agent loop on each script; conversations of the answered episodes, and all results."""
    agent = Agent(policy, perception, limits)
    conversations, results = [], []
    for script in scripts:
        episode = script.episode()
        result = agent.run(episode)
        results.append(result)
        messages = conversation(episode, result, perception, limits)
        if messages is not None:
            conversations.append(messages)
    return conversations, results


def scripts_by_id(scripts: Iterable[Script]) -> dict[str, Script]:
    table = {}
    for script in scripts:
        if script.id in table:
            raise ValueError(f"duplicate script id {script.id!r}")
        table[script.id] = script
    return table


def episodes_by_id(scripts: Mapping[str, Script]) -> dict[str, Episode]:
    return {key: script.episode() for key, script in scripts.items()}
