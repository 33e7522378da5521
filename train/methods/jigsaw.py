"""OmniJigsaw (seed 003, Sec. 3.1 and 3.6): a self-supervised clip-reordering task made from any script, and its reward.

Task (Sec. 3.1): split one video of a script into N equal clips, trim `trim` of each clip's length from both borders
(no boundary-continuity shortcut), shuffle with a random permutation pi; shown clip j is s_{pi^-1(j)} and the answer
y = [pi(1), ..., pi(N)] is, for each clip in time order, its shown number: the PSS answer form '3->1->2', so the
registry's ordering task, the simulator and the agent loop run it unchanged. The modality orchestration (JMI / SMS /
CMM, Sec. 3.2-3.4) travels in `reference["jigsaw"]` and is applied by `simulator/jigsaw_sim.py`.

Reward (Eq. 6-7): R = R_rep + R_fmt + lambda(acc) (0.5 R_pos + 0.5 R_cont), R_rep = -0.5 when any 20-gram occurs
more than 3 times, R_fmt = +0.2 for a well-formed answer, lambda = 1 for the exact order else 0.2.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Literal

from agentcvr.script import Event, Script, VideoScript
from agentcvr.tasks import scoring

Mode = Literal["JMI", "SMS", "CMM"]
QUESTION = (
    "The {n} videos are clips of one recording, shown in shuffled order. Restore their original chronological order."
)


def jigsaw_script(
    script: Script, n_clips: int = 4, trim: float = 0.1, mode: Mode = "JMI", seed: int = 0, video: int = 1
) -> Script:
    """A jigsaw episode from video `video` of `script` (its events cut to the trimmed clips)."""
    if n_clips < 2:
        raise ValueError(f"n_clips must be at least 2, got {n_clips}")
    if not 0 <= trim < 0.5:
        raise ValueError(f"trim is a fraction of a clip per border, in [0, 0.5), got {trim}")
    source = script.videos[video - 1]
    length = source.duration / n_clips
    clips = []
    for i in range(n_clips):  # chronological clips s_1..s_N after trimming both borders
        start, end = i * length + trim * length, (i + 1) * length - trim * length
        clips.append((start, end, _cut(source.events, start, end)))
    rng = random.Random(seed)
    shown = list(range(n_clips))  # shown[j] = chronological index of shown clip j  (pi^-1)
    while shown == sorted(shown):  # never the identity: the puzzle must need solving
        rng.shuffle(shown)
    answer = "->".join(str(shown.index(i) + 1) for i in range(n_clips))  # y_i = pi(i), 1-based
    videos = [
        VideoScript(
            index=j + 1,
            duration=round(clips[c][1] - clips[c][0], 3),
            name=f"clip {j + 1}",
            source=source.name or script.id,
            offset=round(clips[c][0], 3),
            events=clips[c][2],
        )
        for j, c in enumerate(shown)
    ]
    masks = [clip_mask(clips[c][2]) for c in shown] if mode == "CMM" else None
    orchestration = {"mode": mode, "dominant": dominant_modality(source.events), "masks": masks}
    return Script(
        id=f"{script.id}-jigsaw{n_clips}-{seed}",
        task="PSS",
        question=QUESTION.format(n=n_clips),
        answer=answer,
        videos=videos,
        reference={"jigsaw": orchestration, "source": script.id},
    )


def _cut(events: list[Event], start: float, end: float) -> list[Event]:
    """Events overlapping [start, end], clipped and shifted to the clip's own seconds."""
    out = []
    for e in events:
        s, t = max(e.start, start), min(e.end, end)
        if t - s > 1e-6:
            out.append(Event(start=round(s - start, 3), end=round(t - start, 3), visual=e.visual, speech=e.speech))
    return out


def dominant_modality(events: list[Event]) -> str:
    """SMS's d (Eq. 3) from the script: 'A' when most events carry speech, else 'V'."""
    spoken = sum(bool(e.speech) for e in events)
    return "A" if events and spoken / len(events) > 0.5 else "V"


def clip_mask(events: list[Event]) -> str:
    """CMM's m_i (Eq. 5) from the script: keep both when each modality has content, else only the richer one."""
    visual = len({e.visual for e in events})
    speech = sum(bool(e.speech) for e in events)
    if visual and speech:
        return "VA"
    return "A" if speech > visual else "V"


# -- reward (Eq. 6-7) -------------------------------------------------------------------------------------------------


def r_pos(predicted: list[int], truth: list[int]) -> float:
    """Share of positions holding the right clip (Eq. 7, left)."""
    return sum(p == t for p, t in zip(predicted, truth, strict=False)) / len(truth)


def r_cont(predicted: list[int], truth: list[int]) -> float:
    """Share of the N-1 adjacent pairs that match the truth's pair at the same position (Eq. 7, right)."""
    pairs = len(truth) - 1
    return sum(predicted[i : i + 2] == truth[i : i + 2] for i in range(min(pairs, len(predicted) - 1))) / pairs


def repetition_penalty(text: str, n: int = 20, max_repeats: int = 3, penalty: float = -0.5) -> float:
    """R_rep: `penalty` when any word n-gram occurs more than `max_repeats` times."""
    tokens = text.split()
    grams = Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return penalty if grams and max(grams.values()) > max_repeats else 0.0


def jigsaw_reward(answer: str | None, truth: str, text: str = "", format_bonus: float = 0.2) -> float:
    """Eq. 6 for one completion: `answer` the extracted order (None if unparseable), `text` the whole generation."""
    reward = repetition_penalty(text)
    order = scoring.normalize_order(answer) if answer else None
    gold = [int(x) for x in truth.split("->")]
    if order is None:
        return reward
    predicted = [int(x) for x in order.split("->")]
    if len(predicted) == len(gold) and sorted(predicted) == sorted(gold):
        reward += format_bonus  # a permutation of the right clips: well formed
    discount = 1.0 if predicted == gold else 0.2
    return reward + discount * (0.5 * r_pos(predicted, gold) + 0.5 * r_cont(predicted, gold))


class JigsawReward:
    """TRL reward callable: Eq. 6 on each rollout's recorded answer (its trace) against its jigsaw episode's order;
    None for rows that are not jigsaw episodes (TRL leaves them out of this reward). R_rep reads `sampled_text`, the
    policy's own turns (train.rollout): TRL's decoded completion also holds the tool output, which the policy did not
    write and which repeats by itself (e.g. the same masked-clip note on every call)."""

    __name__ = "jigsaw"

    def __call__(self, completions: list, trace: list, episode: list, sampled_text: list[str], **kwargs):
        rewards: list[float | None] = []
        for result, ep, text in zip(trace, episode, sampled_text, strict=True):
            rewards.append(jigsaw_reward(result.answer, str(ep.answer), text) if "jigsaw" in ep.reference else None)
        return rewards
