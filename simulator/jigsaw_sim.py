"""OmniJigsaw's modality orchestration (seed 003, Eq. 2, 4, 5) around any simulator, for jigsaw episodes.

JMI: both modalities of every clip (identity). SMS: only the sample's dominant modality d (the other answers as a
null stream). CMM: per clip, only the modalities its selection m_i keeps. Episodes without `reference["jigsaw"]` pass
through unchanged, so one simulator serves a mixed dataset.
"""

from __future__ import annotations

from agentcvr.actions import Listen, Observe
from agentcvr.episode import Episode
from agentcvr.interfaces import Perception

MASKED_VISUAL = "Nothing to see: the frames of this clip are masked."
MASKED_AUDIO = "Nothing to hear: the audio of this clip is masked."


class OrchestratedSimulator:
    """Wraps a `Perception`; masks observe/listen per the jigsaw episode's orchestration."""

    def __init__(self, base: Perception):
        self.base = base

    def observe(self, episode: Episode, action: Observe) -> str:
        return self.base.observe(episode, action) if self._keeps(episode, action.video, "V") else MASKED_VISUAL

    def listen(self, episode: Episode, action: Listen) -> str:
        return self.base.listen(episode, action) if self._keeps(episode, action.video, "A") else MASKED_AUDIO

    @staticmethod
    def _keeps(episode: Episode, video: int, modality: str) -> bool:
        plan = episode.reference.get("jigsaw")
        if plan is None or plan["mode"] == "JMI":
            return True
        if plan["mode"] == "SMS":
            return plan["dominant"] == modality
        if plan["mode"] == "CMM":
            return modality in plan["masks"][video - 1]
        raise ValueError(f"unknown jigsaw orchestration {plan['mode']!r}: choose JMI, SMS or CMM")
