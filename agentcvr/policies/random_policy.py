"""The random policy: a few random valid tool calls, then a random well-formed answer (the lower bound).

Deterministic per (seed, episode id, turn), so a rerun reproduces every trace.
"""

from __future__ import annotations

import json
import random

from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput
from agentcvr.session import forced_turn
from agentcvr.tasks import get_task

FOCUS_WORDS = ["people", "objects", "actions", "what happens", "the main event", "changes", "tools", "vehicles"]


class RandomPolicy:
    """`Policy` that calls observe/listen 1..max_calls times on random intervals, then answers at random."""

    protocol = "tools"

    def __init__(self, seed: int = 0, max_calls: int = 3):
        self.seed = seed
        self.max_calls = max_calls

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        calls = random.Random(f"{self.seed}:{episode.id}").randint(1, self.max_calls)
        rng = random.Random(f"{self.seed}:{episode.id}:{turn}")
        if turn >= calls or forced_turn(messages):
            answer = get_task(episode.task).random_answer(episode, rng)
            return PolicyOutput(tool_calls=[_call(turn, "answer", {"answer": answer})])
        video = rng.choice(episode.videos)
        start = round(rng.uniform(0, video.duration * 0.9), 1)
        end = round(min(video.duration, start + rng.uniform(1, max(2.0, video.duration / 3))), 1)
        if end <= start:  # clips shorter than a rounding step
            start, end = 0.0, video.duration
        arguments: dict = {"video": video.index, "start": start, "end": end}
        if rng.random() < 0.7:
            return PolicyOutput(tool_calls=[_call(turn, "observe", {**arguments, "focus": rng.choice(FOCUS_WORDS)})])
        return PolicyOutput(tool_calls=[_call(turn, "listen", arguments)])


def _call(turn: int, name: str, arguments: dict) -> dict:
    return {"id": f"random_{turn}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
