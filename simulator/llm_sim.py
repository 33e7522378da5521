"""The LLM text simulator: an LLM plays the visual agent, given only the script slice of the queried interval.

The published simulator hands the whole script of every video to the LLM and trusts it not to leak; here the LLM
receives only the events that overlap the queried interval of the queried video, with their times clipped to it
(the rule-based simulator computes that slice), plus the focus prompt. It is told the published rules: speak as a
visual agent watching the frames, never reveal the script, follow its timestamps strictly, invent nothing. The
third rule, "No significant action observed." when nothing is scripted, is applied in code: an empty slice returns
that sentence without a call (a 0.5B model told about the sentence replies with it whatever the notes say).
`listen` returns the script's speech with no LLM, as in the paper.

    sim = LLMSimulator(scripts, base_url="http://localhost:8000/v1", model="Qwen/Qwen3-4B", cache_path="sim.jsonl")
    sim = LLMSimulator(scripts, chat=GGUFChat())          # the embedded model, in-process
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentcvr.actions import Listen, Observe
from agentcvr.chat import CachedChat, ChatBackend, OpenAIChat
from agentcvr.episode import Episode
from agentcvr.script import Script
from simulator.noise import Noise
from simulator.script_sim import NO_VISUAL, ScriptSimulator

INSTRUCTIONS = """You are the visual agent of a video question-answering team: you describe what the frames of one \
video interval show. The user message gives the interval, a focus, and timed notes on what the frames contain.
Describe what happens, in time order, with each event's [start s - end s], paying attention to the focus.
Speak as someone watching the video: never mention the notes or a script. Follow the note times strictly and do \
not invent anything. Use at most {max_sentences} sentences."""


class LLMSimulator:
    """`Perception` over scripts where an LLM words each observation from the interval's script slice."""

    def __init__(
        self,
        scripts: Mapping[str, Script],
        chat: ChatBackend | None = None,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str = "EMPTY",
        temperature: float = 0.1,
        max_tokens: int = 256,
        cache_path: str | Path | None = None,
        max_events: int = 12,
        max_sentences: int = 6,
        noise: Noise | None = None,
    ):
        if chat is None:
            if not model:
                raise ValueError("LLMSimulator needs a chat backend, or base_url and model of an OpenAI-compatible URL")
            chat = OpenAIChat(model, base_url=base_url, api_key=api_key, temperature=temperature, max_tokens=max_tokens)
        self.chat = CachedChat(chat, cache_path)
        self.slicer = ScriptSimulator(scripts, max_events=max_events, noise=noise)
        self.instructions = INSTRUCTIONS.format(max_sentences=max_sentences)

    def messages(self, episode: Episode, action: Observe) -> list[dict] | None:
        """The chat request for one observe call, or None when nothing is scripted in the interval."""
        notes = self.slicer.observe(episode, action)
        return None if notes == NO_VISUAL else self._request(action, notes)

    def observe(self, episode: Episode, action: Observe) -> str:
        notes = self.slicer.observe(episode, action)
        if notes == NO_VISUAL:
            return NO_VISUAL
        reply = self.chat(self._request(action, notes)).strip()
        return reply or notes  # an empty reply: the slice itself rather than a false "nothing happens"

    def _request(self, action: Observe, notes: str) -> list[dict]:
        focus = f" Focus: {action.focus}." if action.focus else ""
        user = f"Video {action.video}, {action.start:.1f}-{action.end:.1f} s.{focus}\nNotes:\n{notes}"
        return [{"role": "system", "content": self.instructions}, {"role": "user", "content": user}]

    def listen(self, episode: Episode, action: Listen) -> str:
        return self.slicer.listen(episode, action)
