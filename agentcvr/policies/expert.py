"""The scripted expert: reads the episode's script, looks exactly where the evidence is, then answers.

It is the teacher for warm-start SFT and the upper bound of the simulator setting, so its trajectories are short and
clean: one call per evidence location (observe with a focus, or listen), then `answer`. It does not
trust the script blindly: it answers the ground truth only if every evidence fact appeared in the observations it
got back through the conversation (with noise on, a dropped event costs the answer); otherwise it answers a random
well-formed answer, as a model without the evidence would have to. Facts are compared as a reader would, ignoring
case and punctuation (`agentcvr.text.facts_found`): OCR and Whisper return 'the roof, wrong way round' for a
script's 'The roof: wrong way round'.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput
from agentcvr.policies.teaching import Call, Look, Protocol, looks, next_calls, write_turn
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


def evidence_calls(scripts: Mapping[str, Script]) -> Callable[[Episode, list[Look]], list[Call]]:
    """The expert's calls for an episode, as a further look after a scan (`ScanThen`): where the evidence is."""

    def calls(episode: Episode, made: list[Look]) -> list[Call]:
        script = scripts.get(episode.id)
        if script is None:
            raise KeyError(f"no script for episode {episode.id!r}")
        return [(visit.tool, visit.arguments) for visit in plan(script)]

    return calls


class ExpertPolicy:
    """`Policy` that solves script episodes: `ExpertPolicy(scripts_by_id)`, writing its turns in `protocol`."""

    def __init__(
        self, scripts: Mapping[str, Script], seed: int = 0, calls_per_turn: int = 1, protocol: Protocol = "tools"
    ):
        self.scripts = scripts
        self.seed = seed
        self.calls_per_turn = calls_per_turn
        self.protocol = protocol
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
        done = looks(messages, episode)
        calls = [(v.tool, v.arguments) for v in visits]
        turns = [calls[i : i + self.calls_per_turn] for i in range(0, len(calls), self.calls_per_turn)]
        upcoming = next_calls(turns, len(done))
        if upcoming and not forced_turn(messages):
            return write_turn(upcoming, self.protocol, f"{CALL_PREFIX}{len(done)}")
        answer = self.answer(messages, episode)
        return write_turn([("answer", {"answer": answer})], self.protocol, f"{CALL_PREFIX}answer")

    def answer(self, messages: list[dict], episode: Episode) -> str:
        """The ground truth in its official form if every fact was observed, else a random well-formed answer."""
        observed = [look.observation for look in looks(messages, episode)]
        visits = self._plan(episode.id)
        seen = len(observed) >= len(visits) and all(
            all(facts_found(v.facts, text)) for v, text in zip(visits, observed, strict=False)
        )
        return answer_if_seen(self.scripts[episode.id], episode, seen, self.seed)


def answer_if_seen(script: Script, episode: Episode, seen: bool, seed: int) -> str:
    """A teacher's answer: the truth in its official form if it saw the evidence, else a random well-formed answer
    (seeded per episode), as a model without the evidence would have to answer."""
    task = get_task(episode.task)
    if seen:
        return task.official_form(script.answer)
    return task.random_answer(episode, random.Random(f"{seed}:{episode.id}"))
