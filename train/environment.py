"""The TRL environment: one simulated episode per rollout, with observe/listen/answer as the model's tools.

TRL 1.16's `GRPOTrainer(environment_factory=...)` builds one instance per rollout (pooled), calls `reset(**row)` with
the dataset row, exposes every public method as a tool (schema from type hints + Google docstring) and appends each
tool result to the conversation as masked tokens (`tool_mask`). We chose `environment_factory` over
`rollout_func` + `env_mask` because our policies speak the `tools` protocol (`<tool_call>` blocks), which TRL already
parses; the JSON protocol would need our own generation loop.

Every call is validated by `agentcvr.parsing.build_action` against the episode (video index, interval inside the
video), exactly as the agent loop does at inference, and counted for the format reward. Tool output is truncated to
`max_observation_chars`; after `max_turns - 1` tool calls the result carries the forced-answer prompt, and TRL's
`max_tool_calling_iterations` stops the rollout at `max_turns` assistant turns.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping

from agentcvr import prompts
from agentcvr.actions import Answer, Listen, Observe
from agentcvr.episode import Episode
from agentcvr.parsing import ParseError, build_action
from agentcvr.protocols import Limits, Perception
from agentcvr.tasks import get_task

ANSWER_RECORDED = "Answer recorded."
EPISODE_OVER = "Error: the episode is over; you already answered."


class CVREnvironment:
    """A multi-video question answered through the simulator. Public methods are the tools the model sees."""

    def __init__(self, episodes: Mapping[str, Episode], perception: Perception, limits: Limits):
        self._episodes, self._perception, self._limits = episodes, perception, limits
        self._clear()

    def _clear(self) -> None:
        self.episode: Episode | None = None
        self.final_answer: str | None = None
        self.tool_calls = 0  # observe/listen calls
        self.invalid_calls = 0  # calls that failed validation (or came after the answer)
        self.simulator_seconds = 0.0

    def reset(self, episode_id: str, **row) -> None:
        """Start the episode of this dataset row; the prompt is already in the row, so nothing is appended."""
        self._clear()
        self.episode = self._episodes[episode_id]

    def observe(self, video: int, start: float | None = None, end: float | None = None, focus: str = "") -> str:
        """Ask the visual agent what happens in a video between start and end (left out: the whole video).

        Args:
            video: Index of the video, starting at 1.
            start: Seconds from the start of the video; omit for 0.
            end: Seconds from the start of the video, after start; omit for its end.
            focus: What to look for in these frames.
        """
        return self._tool("observe", _given(video=video, start=start, end=end, focus=focus))

    def listen(self, video: int, start: float | None = None, end: float | None = None) -> str:
        """Ask the audio agent for the speech in a video between start and end (left out: the whole video).

        Args:
            video: Index of the video, starting at 1.
            start: Seconds from the start of the video; omit for 0.
            end: Seconds from the start of the video, after start; omit for its end.
        """
        return self._tool("listen", _given(video=video, start=start, end=end))

    def answer(self, answer: str) -> str:
        """Give the final answer, in the format the question asks for. This ends the episode.

        Args:
            answer: The final answer, e.g. 'B', 'AC', '3->1->2' or '12.5,20.0'.
        """
        if self.final_answer is not None:
            self.invalid_calls += 1
            return EPISODE_OVER
        action = build_action("answer", {"answer": answer}, self.episode)
        if isinstance(action, ParseError):
            self.invalid_calls += 1
            return f"Error: {action.message}"
        assert isinstance(action, Answer)
        self.final_answer = action.answer
        return ANSWER_RECORDED

    def _tool(self, name: str, arguments: dict) -> str:
        assert self.episode is not None, "reset() first"
        if self.final_answer is not None:
            self.invalid_calls += 1
            return EPISODE_OVER
        action = build_action(name, arguments, self.episode)
        if isinstance(action, ParseError):
            self.invalid_calls += 1
            return f"Error: {action.message}"
        self.tool_calls += 1
        started = time.perf_counter()
        if isinstance(action, Observe):
            text = self._perception.observe(self.episode, action)
        else:
            assert isinstance(action, Listen)
            text = self._perception.listen(self.episode, action)
        self.simulator_seconds += time.perf_counter() - started
        text = text[: self._limits.max_observation_chars]
        if self.tool_calls >= self._limits.max_turns - 1:
            answer_format = get_task(self.episode.task).answer_format
            text += "\n" + prompts.FORCE_ANSWER.format(answer_format=answer_format)
        return text


def environment_factory(episodes: Mapping[str, Episode], perception: Perception, limits: Limits):
    """A zero-argument factory for `GRPOTrainer(environment_factory=...)`, sharing episodes and simulator."""

    def make() -> CVREnvironment:
        return CVREnvironment(episodes, perception, limits)

    return make


def tool_names() -> list[str]:
    """The tools in the order TRL lists them: the class's public functions, by name (`inspect.getmembers` order)."""
    members = inspect.getmembers(CVREnvironment, predicate=inspect.isfunction)
    return [name for name, _ in members if not name.startswith("_") and name not in ("reset", "get_reward")]


def tool_schemas() -> list[dict]:
    """The tool schemas TRL renders into the prompt for this environment, in its order (the rendered system block
    must match token for token between warm start, GRPO rollouts and HFPolicy; `tools.json` carries them)."""
    from transformers.utils import get_json_schema

    env = CVREnvironment({}, perception=None, limits=Limits())  # type: ignore[arg-type]
    return [get_json_schema(getattr(env, name)) for name in tool_names()]


def _given(**arguments: object) -> dict:
    """The arguments the model wrote (an omitted time stays omitted, so the action covers the whole video)."""
    return {name: value for name, value in arguments.items() if value is not None}
