"""The episode: one multi-video question, as the agent sees it.

The same type comes from the script generator, from the CrossVid loader and from an `/answer` request. Ground truth
(`answer`, `reference`) travels with it for scoring but is never shown to the policy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

OPTION_LABEL = re.compile(r"^\s*([A-Z])[.)]\s*")  # an option's "A. " or "A) " label, the letter captured


def option_texts(options: Sequence[str]) -> list[str]:
    """The options without their 'A. ' labels."""
    return [OPTION_LABEL.sub("", option, count=1) for option in options]


class VideoRef(BaseModel):
    """One video (or clip of a video) the agent may query, numbered from 1 in the episode."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=1, description="1-based position in the episode.")
    duration: float = Field(gt=0, description="Seconds; the agent's time axis runs from 0 to this.")
    name: str = Field(default="", description="Source id or file name, e.g. 'cook/abc.mp4'.")
    path: str | None = Field(default=None, description="Video file for real perception, if any.")
    offset: float = Field(default=0.0, ge=0, description="Start of this clip inside the source file, in seconds.")
    label: str = Field(default="", description="How the prompt names it, e.g. 'Video 2' or 'view A'.")


class Episode(BaseModel):
    """A question over several videos, with its task kind and (for scoring) its ground truth."""

    model_config = ConfigDict(extra="forbid")

    id: str
    task: str = Field(description="Task kind, a key of the task registry (BU, NC, ..., CCQA).")
    question: str
    options: list[str] = Field(default_factory=list)
    videos: list[VideoRef]
    answer: Any = Field(default=None, description="Ground truth in the task's official form; hidden from the policy.")
    reference: dict[str, Any] = Field(default_factory=dict, description="Extra ground truth (e.g. scoring points).")
    context: dict[str, Any] = Field(
        default_factory=dict, description="Extra facts shown to the agent (e.g. ref_segment)."
    )

    @model_validator(mode="after")
    def _indices(self) -> Episode:
        expected = list(range(1, len(self.videos) + 1))
        if [v.index for v in self.videos] != expected:
            raise ValueError(f"video indices must be {expected}, got {[v.index for v in self.videos]}")
        return self

    def video(self, index: int) -> VideoRef:
        """The video with this 1-based index; raises KeyError naming the valid range."""
        if not 1 <= index <= len(self.videos):
            raise KeyError(f"unknown video {index}: this episode has videos 1..{len(self.videos)}")
        return self.videos[index - 1]

    def public(self) -> dict[str, Any]:
        """What the policy may see: no answer, no reference, no clip offsets (PSS order is the offsets' order)."""
        return self.model_dump(exclude={"answer": True, "reference": True, "videos": {"__all__": {"offset", "path"}}})


def question_focus(episode: Episode, limit: int = 500, found: Sequence[str] = ()) -> str:
    """What a look searches for when the master names no focus: the question, its options' texts, then `found` (what
    the master's earlier looks showed). A visual agent told the question and the notes so far needs no copy of them
    in every call: a small master copies 500 characters badly, and FSA's second look must search video 2 for what
    the reference segment showed."""
    return " ".join([episode.question, *option_texts(episode.options), *found]).strip()[:limit]
