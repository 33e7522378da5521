"""LLM augmentation of generated scripts: richer visual descriptions, a paraphrased question, extra filler events.

An LLM behind an OpenAI-compatible URL (or the in-process GGUF model: any `agentcvr.chat` backend) gets the editable
part of a script — the question and the timelines — and returns the same JSON shape rewritten. The rewrite becomes a
new `Script` only if it passes every check, in this order (the first failure is the rejection reason):

    not_json           the reply holds no JSON object
    bad_shape          not {"question": str, "videos": [{"index": int, "events": [...]}]} for the same videos
    schema             the merged script does not validate (times, durations, empty text...)
    timeline_changed   an original event's interval disappeared, or an added event overlaps an original one
    speech_changed     an original event's speech was altered (speech is the audio ground truth)
    evidence_missing   an evidence fact no longer appears where the simulator would report it
    evidence_repeated  an added event repeats an evidence fact (it could change the answer)

Options, answer, evidence, durations and ids are never taken from the LLM. `Augmenter.rejected` counts reasons.

    augmenter = Augmenter(OpenAIChat("Qwen/Qwen3-4B", base_url="http://localhost:8000/v1"))
    scripts = [augmenter(s).script or s for s in scripts]
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agentcvr.actions import Listen, Observe
from agentcvr.chat import ChatBackend
from agentcvr.script import Event, Script
from simulator.script_sim import ScriptSimulator

INSTRUCTIONS = """You improve synthetic video scripts. You get a JSON object with a question and, for each video, a \
timeline of events (seconds). Return the same JSON object, rewritten:
- make each "visual" richer and more concrete (people, objects, colours, motion), one or two sentences;
- paraphrase "question" without changing its meaning;
- you may add short filler events in gaps of the timeline that show nothing relevant to the question.
Keep every event's "start", "end" and "speech" exactly, keep the videos and their order, and keep each sentence \
listed under "keep_verbatim" word for word inside the visual of the event that contains it.
Reply with the JSON object only."""


@dataclass(frozen=True)
class AugmentResult:
    """A validated new script, or None with the reason the rewrite was rejected."""

    script: Script | None
    reason: str = "ok"
    detail: str = ""
    raw: str = ""


def editable_view(script: Script) -> dict[str, Any]:
    """What the LLM sees and may rewrite: question and timelines, plus the facts to keep word for word."""
    return {
        "question": script.question,
        "videos": [
            {
                "index": video.index,
                "duration": video.duration,
                "events": [e.model_dump(exclude_none=True) for e in video.events],
            }
            for video in script.videos
        ],
        "keep_verbatim": sorted({e.fact for e in script.evidence if e.fact and e.tool == "observe"}),
    }


REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1},
        "videos": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "events": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "start": {"type": "number"},
                                "end": {"type": "number"},
                                "visual": {"type": "string", "minLength": 1},
                                "speech": {"type": "string"},
                            },
                            "required": ["start", "end", "visual"],
                        },
                    },
                },
                "required": ["index", "events"],
            },
        },
    },
    "required": ["question", "videos"],
}


class Augmenter:
    """Rewrites scripts with a chat backend and keeps only rewrites that stay consistent with the answer."""

    def __init__(self, chat: ChatBackend, instructions: str = INSTRUCTIONS, constrain: bool = True):
        self.chat, self.instructions, self.constrain = chat, instructions, constrain
        self.accepted = 0
        self.rejected: Counter[str] = Counter()

    def messages(self, script: Script) -> list[dict]:
        return [
            {"role": "system", "content": self.instructions},
            {"role": "user", "content": json.dumps(editable_view(script), ensure_ascii=False)},
        ]

    def __call__(self, script: Script) -> AugmentResult:
        raw = self.chat(self.messages(script), REPLY_SCHEMA if self.constrain else None)
        result = check_rewrite(script, raw)
        if result.script is None:
            self.rejected[result.reason] += 1
        else:
            self.accepted += 1
        return result


def check_rewrite(original: Script, raw: str) -> AugmentResult:
    """Merge an LLM reply into the original script and run every consistency check."""

    def reject(reason: str, detail: str) -> AugmentResult:
        return AugmentResult(None, reason, detail, raw)

    reply = _first_object(raw)
    if reply is None:
        return reject("not_json", "no JSON object in the reply")
    question, videos = reply.get("question"), reply.get("videos")
    if not isinstance(question, str) or not question.strip() or not isinstance(videos, list):
        return reject("bad_shape", "needs a non-empty 'question' and a 'videos' list")
    if [v.get("index") if isinstance(v, dict) else None for v in videos] != [v.index for v in original.videos]:
        return reject("bad_shape", f"videos must be {[v.index for v in original.videos]} in order")
    try:
        data = original.model_dump()
        data["question"] = question.strip()
        for target, video in zip(data["videos"], videos, strict=True):
            target["events"] = video.get("events")
        script = Script.model_validate(data)
    except (ValidationError, TypeError, ValueError) as error:
        return reject("schema", str(error).splitlines()[0] if str(error) else type(error).__name__)
    for before, after in zip(original.videos, script.videos, strict=True):
        problem = _timeline_problem(before.events, after.events)
        if problem is not None:
            return reject(problem[0], f"video {before.index}: {problem[1]}")
    missing = _missing_evidence(script)
    if missing:
        return reject("evidence_missing", missing)
    repeated = _repeated_evidence(original, script)
    if repeated:
        return reject("evidence_repeated", repeated)
    return AugmentResult(script, "ok", "", raw)


def _timeline_problem(before: list[Event], after: list[Event]) -> tuple[str, str] | None:
    spans = {(e.start, e.end): e for e in after}
    for event in before:
        kept = spans.get((event.start, event.end))
        if kept is None:
            return "timeline_changed", f"event [{event.start:g}, {event.end:g}] is gone or moved"
        if (kept.speech or None) != (event.speech or None):
            return "speech_changed", f"speech of [{event.start:g}, {event.end:g}] changed"
    originals = {(e.start, e.end) for e in before}
    for event in after:
        if (event.start, event.end) in originals:
            continue
        if any(event.start < e.end and e.start < event.end for e in before):
            return "timeline_changed", f"added event [{event.start:g}, {event.end:g}] overlaps an original event"
    return None


def _missing_evidence(script: Script) -> str:
    """The first evidence fact the rule-based simulator no longer reports at its interval ('' if none)."""
    simulator = ScriptSimulator({script.id: script})
    episode = script.episode
    for item in script.evidence:
        if not item.fact:
            continue
        if item.tool == "listen":
            seen = simulator.listen(episode, Listen(video=item.video, start=item.start, end=item.end))
        else:
            action = Observe(video=item.video, start=item.start, end=item.end, focus=item.focus)
            seen = simulator.observe(episode, action)
        if _norm(item.fact) not in _norm(seen):
            return f"video {item.video} [{item.start:g}, {item.end:g}]: {item.fact!r}"
    return ""


def _repeated_evidence(original: Script, script: Script) -> str:
    facts = [_norm(e.fact) for e in original.evidence if e.fact]
    for before, after in zip(original.videos, script.videos, strict=True):
        spans = {(e.start, e.end) for e in before.events}
        for event in after.events:
            if (event.start, event.end) in spans:
                continue
            text = _norm(f"{event.visual} {event.speech or ''}")
            hit = next((f for f in facts if f in text), None)
            if hit:
                return f"video {before.index}: added event [{event.start:g}, {event.end:g}] repeats {hit!r}"
    return ""


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _first_object(text: str) -> dict | None:
    """The first JSON object in a reply (code fences and prose around it allowed)."""
    decoder = json.JSONDecoder()
    position = 0
    while (start := text.find("{", position)) != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            position = start + 1
            continue
        if isinstance(value, dict):
            return value
        position = start + 1
    return None
