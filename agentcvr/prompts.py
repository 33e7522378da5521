"""Prompts for the master agent, rendered from templates with strict undefined variables.

Two protocols share one user message: `tools` (OpenAI tool calls or Qwen `<tool_call>` text; the tool schemas carry
the argument docs) and `json` (the published AgentCVR one-JSON-object-per-turn protocol, described in the prompt).
"""

from __future__ import annotations

from typing import Literal

from jinja2 import Environment, StrictUndefined

from agentcvr.episode import Episode
from agentcvr.tasks import get_task

Protocol = Literal["tools", "json"]
_ENV = Environment(undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)

SYSTEM_TOOLS = _ENV.from_string(
    """You are the master agent of a video question-answering team. You cannot see the videos yourself.
Gather evidence with the tools, one or a few calls per turn:
- observe(video, start, end, focus): the visual agent describes what happens in that interval, looking for the focus.
- listen(video, start, end): the audio agent transcribes the speech in that interval.
- answer(answer): your final answer; this ends the episode.
Videos are numbered from 1; times are seconds from the start of each video. Leave out start and end to cover the whole
video: scan each video first, then zoom in on the moments that matter. Look before you answer: base the answer on
what the agents report, not on guesses. You have at most {{ max_turns }} turns."""
)

# Placeholders, not example values: small models copy a literal example call word for word, turn after turn.
SYSTEM_JSON = _ENV.from_string(
    """You are the master agent of a video question-answering team. You cannot see the videos yourself.
Each turn, reply with exactly one JSON object of one of these shapes (fill in the <...> parts):
{"action": "observe", "thought": "<why>", "params": {"observation_targets": [{"video_index": <video number>, \
"start_time": <seconds>, "end_time": <seconds>}], "focus_prompt": "<what to look for>"}}
{"action": "get_caption", "thought": "<why>", "params": {"video_index": <video number>, "start_time": <seconds>, \
"end_time": <seconds>}}
{"action": "answer", "thought": "<why>", "final_answer": "<answer>"}
observe asks the visual agent what happens in those intervals; get_caption returns the speech in one.
Videos are numbered from 1; times are seconds from the start of each video; leave out start_time and end_time to
cover the whole video. Look at every video the question is
about (a whole video first, then zoom in), listen where speech may matter, never repeat a call, and answer from
what the agents report, not from guesses. You have at most {{ max_turns }} turns."""
)

USER = _ENV.from_string(
    """Task: {{ task_name }}.
Videos:
{% for v in videos %}
- Video {{ v.index }}{% if v.label %} ({{ v.label }}){% endif %}: {{ '%.1f' % v.duration }} s
{% endfor %}
{% if context %}
{{ context }}
{% endif %}
Question: {{ question }}
{% if options %}
Options:
{% for option in options %}
{{ option }}
{% endfor %}
{% endif %}
{{ answer_format }}"""
)

FORCE_ANSWER = "You have reached the turn limit. Answer now with the answer tool. {answer_format}"
RECOVER = "Your last reply was not a valid action ({error}). {hint}"


def system_prompt(protocol: Protocol, max_turns: int) -> str:
    template = SYSTEM_JSON if protocol == "json" else SYSTEM_TOOLS
    return template.render(max_turns=max_turns)


def user_prompt(episode: Episode) -> str:
    """The question, the videos with their durations and the answer format; never the ground truth."""
    task = get_task(episode.task)
    context = "\n".join(f"{key}: {value}" for key, value in episode.context.items())
    return USER.render(
        task_name=task.name,
        videos=episode.videos,
        context=context,
        question=episode.question,
        options=episode.options,
        answer_format=task.answer_format,
    )


def initial_messages(episode: Episode, protocol: Protocol, max_turns: int) -> list[dict]:
    return [
        {"role": "system", "content": system_prompt(protocol, max_turns)},
        {"role": "user", "content": user_prompt(episode)},
    ]


def recovery_hint(protocol: Protocol) -> str:
    if protocol == "json":
        return "Reply with one valid JSON object."
    return "Call exactly one of the tools observe, listen or answer with valid arguments."
