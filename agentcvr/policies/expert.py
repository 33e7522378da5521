"""The scripted expert: reads the episode's script, looks exactly where the evidence is, then answers.

It is the teacher for warm-start SFT and the upper bound of the simulator setting, so its trajectories are short and
clean: one OpenAI-style tool call per evidence location (observe with a focus, or listen), then `answer`. It does not
trust the script blindly: it answers the ground truth only if every evidence fact appeared in the observations it
got back through the conversation (with noise on, a dropped event costs the answer); otherwise it answers a random
well-formed answer, as a model without the evidence would have to. Facts are compared as a reader would, ignoring
case and punctuation (`agentcvr.text.facts_found`): OCR and Whisper return 'the roof, wrong way round' for a
script's 'The roof: wrong way round'.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput
from agentcvr.session import forced_turn
from agentcvr.tasks import get_task
from agentcvr.text import facts_found

if TYPE_CHECKING:
    from agentcvr.script import Script

CALL_PREFIX = "expert_"


@dataclass(frozen=True)
class Visit:
    """One tool call of the plan and the facts its observation must contain."""

    tool: str
    arguments: dict
    facts: tuple[str, ...]


def plan(script: Script) -> list[Visit]:
    """The calls that visit every evidence item once; items at the same place share a call."""
    visits: dict[tuple, Visit] = {}
    for item in script.evidence:
        arguments: dict = {"video": item.video, "start": item.start, "end": item.end}
        if item.tool == "observe":
            arguments["focus"] = item.focus
        key = (item.tool, *arguments.values())
        previous = visits.get(key)
        visits[key] = Visit(item.tool, arguments, (previous.facts if previous else ()) + (item.fact,))
    return list(visits.values())


class ExpertPolicy:
    """`Policy` that solves script episodes: `ExpertPolicy(scripts_by_id)`."""

    protocol = "tools"

    def __init__(self, scripts: Mapping[str, Script], seed: int = 0, calls_per_turn: int = 1):
        self.scripts = scripts
        self.seed = seed
        self.calls_per_turn = calls_per_turn
        self._plans: dict[str, list[Visit]] = {}

    def _plan(self, episode_id: str) -> list[Visit]:
        if episode_id not in self._plans:
            script = self.scripts.get(episode_id)
            if script is None:
                raise KeyError(f"no script for episode {episode_id!r}")
            self._plans[episode_id] = plan(script)
        return self._plans[episode_id]

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        visits = self._plan(episode.id)
        issued = sum(
            1
            for m in messages
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
            if str(c.get("id", "")).startswith(CALL_PREFIX)
        )
        if issued < len(visits) and not forced_turn(messages):
            batch = range(issued, min(issued + self.calls_per_turn, len(visits)))
            return PolicyOutput(tool_calls=[_call(i, visits[i].tool, visits[i].arguments) for i in batch])
        return PolicyOutput(tool_calls=[_call(len(visits), "answer", {"answer": self.answer(messages, episode)})])

    def answer(self, messages: list[dict], episode: Episode) -> str:
        """The ground truth in its official form if every fact was observed, else a random well-formed answer."""
        observed = {m.get("tool_call_id"): str(m.get("content", "")) for m in messages if m.get("role") == "tool"}
        visits = self._plan(episode.id)
        seen = all(all(facts_found(v.facts, observed.get(f"{CALL_PREFIX}{i}", ""))) for i, v in enumerate(visits))
        return answer_if_seen(self.scripts[episode.id], episode, seen, self.seed)


def answer_if_seen(script: Script, episode: Episode, seen: bool, seed: int) -> str:
    """A teacher's answer: the truth in its official form if it saw the evidence, else a random well-formed answer
    (seeded per episode), as a model without the evidence would have to answer."""
    task = get_task(episode.task)
    if seen:
        return task.official_form(script.answer)
    return task.random_answer(episode, random.Random(f"{seed}:{episode.id}"))


def tool_call(call_id: str, name: str, arguments: dict) -> dict:
    """An OpenAI-style tool call, as a teacher writes it."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _call(index: int, name: str, arguments: dict) -> dict:
    return tool_call(f"{CALL_PREFIX}{index}", name, arguments)
