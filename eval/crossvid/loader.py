"""Reads the official CrossVid layout into `Episode`s: `QA/<TASK>.json`, `videos/...`, `uav/bbox|frames/{1,2}/`.

    items, problems = load_crossvid(Path("/data/CrossVid"), tasks=["BU", "FSA"])
    missing = missing_media(items)          # checked before any run: count and examples

Each `CrossVidItem` keeps its raw JSON (single-pass mode reads it) and either an episode or the reason it
cannot run; such an item is recorded as a failure (the official scripts drop it the same way), never a crash mid-run.
Items that cannot even be identified (no id, duplicate id, not an object) are returned as `problems`.
Clips follow the official scripts: PEA `int(begin)..int(end)`, PI beginning/ending, PSS segments in key order
(several sub-intervals become one clip spanning them, the parts listed in the question), FSA's reference segment in
the question. UAV views are frame folders, read by the visual agent as videos at `uav_fps` frames per second.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentcvr.episode import Episode, VideoRef
from agentcvr.perception.folder import FOLDER_FPS
from agentcvr.tasks import TASK_ORDER
from eval.crossvid import uav

PI_QUESTION = (
    "The two clips are the beginning and the ending of one movie; the middle part is missing. "
    "Which option best describes what happens in between?"
)
FSA_QUESTION = (
    "Which step in video 2 is functionally equivalent to the step shown between {begin}s and {end}s in video 1? "
    "Give its start and end time in video 2."
)
PSS_QUESTION = "The segments are steps of one cooking video, shuffled. In which order do they happen?"
UAV_FPS = FOLDER_FPS  # frame folders carry no rate: the agent's time axis is frames / fps seconds, as perception reads


@dataclass
class CrossVidItem:
    """One benchmark item: its key (`TASK/id`), raw JSON, media it needs, and its episode or why it cannot run."""

    task: str
    raw: dict
    media: list[Path] = field(default_factory=list)
    episode: Episode | None = None
    error: str | None = None

    @property
    def key(self) -> str:
        return f"{self.task}/{self.raw['id']}"

    def fields(self) -> dict[str, Any]:
        """What its record holds before running: the id, the gold answer as annotated, CCQA's scoring points."""
        return {
            "item_id": self.raw["id"],
            "gold": self.raw.get("answer"),
            "points": len(self.raw.get("scoring_points") or []),
        }


@dataclass
class LoadProblem:
    task: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.task} {self.where}: {self.message}"


def load_crossvid(
    root: Path, tasks: list[str] | None = None, qa_dir: Path | None = None, uav_fps: float = UAV_FPS
) -> tuple[list[CrossVidItem], list[LoadProblem]]:
    """All items of the chosen tasks (default: all ten), in file order, plus the problems found."""
    qa_dir = qa_dir or root / "QA"
    items: list[CrossVidItem] = []
    problems: list[LoadProblem] = []
    for task in tasks or TASK_ORDER:
        if task not in TASK_ORDER:
            raise ValueError(f"unknown task {task!r}: choose from {', '.join(TASK_ORDER)}")
        path = qa_dir / f"{task}.json"
        if not path.is_file():
            problems.append(LoadProblem(task, str(path), "annotation file not found"))
            continue
        try:
            raw_items = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            problems.append(LoadProblem(task, str(path), f"not valid JSON: {error}"))
            continue
        if not isinstance(raw_items, list):
            problems.append(LoadProblem(task, str(path), "expected a JSON array of items"))
            continue
        seen: set[Any] = set()
        for position, raw in enumerate(raw_items):
            if not isinstance(raw, dict) or "id" not in raw:
                problems.append(LoadProblem(task, f"item #{position}", "not an object with an 'id'"))
                continue
            if raw["id"] in seen:
                problems.append(LoadProblem(task, f"id {raw['id']!r}", "duplicate id (kept the first)"))
                continue
            seen.add(raw["id"])
            items.append(build_item(task, raw, root, uav_fps))
    return items, problems


def build_item(task: str, raw: dict, root: Path, uav_fps: float = UAV_FPS) -> CrossVidItem:
    """The item with its episode, or with the error that keeps it from running (named, with the item id)."""
    item = CrossVidItem(task, raw)
    try:
        item.media = _media(task, raw, root)
        item.episode = _BUILDERS[task](raw, root, uav_fps, item.key)
    except (KeyError, TypeError, ValueError, IndexError, OSError, ValidationError) as error:
        message = f"missing field {error}" if isinstance(error, KeyError) else str(error).splitlines()[0]
        item.error = f"{item.key}: malformed item: {message}"
    return item


def missing_media(items: list[CrossVidItem]) -> dict[str, list[Path]]:
    """Item key -> the media files/folders it needs that are not there."""
    missing = {}
    for item in items:
        absent = [path for path in item.media if not path.exists()]
        if absent:
            missing[item.key] = absent
    return missing


def _media(task: str, raw: dict, root: Path) -> list[Path]:
    if task in ("MSR", "MOC"):
        return [
            p
            for view in ("A", "B")
            for p in (uav.frame_folder(root, raw["vid"], view), uav.bbox_file(root, raw["vid"], view))
        ]
    names = (
        raw["videos"] if "videos" in raw else [raw["video A"], raw["video B"]] if "video A" in raw else [raw["video"]]
    )
    return [root / "videos" / name for name in names]


def _ref(index: int, name: str, root: Path, duration: float, offset: float = 0.0, label: str = "") -> VideoRef:
    return VideoRef(
        index=index, duration=duration, name=name, path=str(root / "videos" / name), offset=offset, label=label
    )


def _options(raw: dict) -> list[str]:
    options = raw["options"]
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ValueError("options must be a list of strings")
    return options


def _multi_video(raw: dict, root: Path, uav_fps: float, key: str) -> Episode:
    """BU, NC, CC: 3-4 whole videos."""
    durations = raw["duration"]
    if len(durations) != len(raw["videos"]):
        raise ValueError(f"{len(raw['videos'])} videos but {len(durations)} durations")
    videos = [
        _ref(i + 1, name, root, float(d)) for i, (name, d) in enumerate(zip(raw["videos"], durations, strict=True))
    ]
    return Episode(
        id=key,
        task=key.split("/")[0],
        question=raw["question"],
        options=_options(raw),
        videos=videos,
        answer=raw["answer"],
    )


def _pea(raw: dict, root: Path, uav_fps: float, key: str) -> Episode:
    """Each video is the clip int(begin_i)..int(end_i), as PEA.py cuts it."""
    videos = []
    for i, (name, begin, end) in enumerate(zip(raw["videos"], raw["begin"], raw["end"], strict=True)):
        start, stop = int(begin), int(end)
        if stop <= start:
            raise ValueError(f"video {i + 1}: clip {begin}..{end} is empty")
        videos.append(_ref(i + 1, name, root, float(stop - start), float(start)))
    return Episode(
        id=key, task="PEA", question=raw["question"], options=_options(raw), videos=videos, answer=raw["answer"]
    )


def _pi(raw: dict, root: Path, uav_fps: float, key: str) -> Episode:
    """Two clips of one movie, 'Beginning' and 'Ending'; PI has no question field (the question is fixed)."""
    videos = []
    for i, (label, (start, end)) in enumerate([("Beginning", raw["beginning"]), ("Ending", raw["ending"])]):
        if float(end) <= float(start):
            raise ValueError(f"{label.lower()} clip {start}..{end} is empty")
        videos.append(_ref(i + 1, raw["video"], root, float(end) - float(start), float(start), label))
    return Episode(id=key, task="PI", question=PI_QUESTION, options=_options(raw), videos=videos, answer=raw["answer"])


def _fsa(raw: dict, root: Path, uav_fps: float, key: str) -> Episode:
    """Video A with the reference segment (in the question and the context), video B where the answer lies."""
    begin, end = raw["ref_segment"]
    duration_a, duration_b = raw["duration"]
    answer = [float(raw["answer"][0]), float(raw["answer"][1])]
    videos = [_ref(1, raw["video A"], root, float(duration_a)), _ref(2, raw["video B"], root, float(duration_b))]
    return Episode(
        id=key,
        task="FSA",
        question=FSA_QUESTION.format(begin=begin, end=end),
        videos=videos,
        answer=answer,
        context={"ref_segment": [begin, end]},
    )


def _pss(raw: dict, root: Path, uav_fps: float, key: str) -> Episode:
    """Segments in JSON key order; a segment of several sub-intervals is one clip from its first start to its last
    end, its parts named in the context. Sub-intervals with start >= end are dropped (as interval2frames does)."""
    videos, parts = [], {}
    for i, (name, intervals) in enumerate(raw["segments"].items()):
        valid = [(float(s), float(e)) for s, e in intervals if float(s) < float(e)]
        if not valid:
            raise ValueError(f"segment {name} has no interval with start < end")
        start, end = valid[0][0], max(e for _, e in valid)
        videos.append(_ref(i + 1, raw["video"], root, end - start, start, f"Segment {i + 1}"))
        if len(valid) > 1:
            parts[str(i + 1)] = [[round(s - start, 3), round(e - start, 3)] for s, e in valid]
    context = {"segment_parts": parts} if parts else {}
    return Episode(id=key, task="PSS", question=PSS_QUESTION, videos=videos, answer=raw["answer"], context=context)


def _uav(raw: dict, root: Path, uav_fps: float, key: str) -> Episode:
    """Two frame folders (views A and B); placeholders renamed `obj_n` and box hints added as the official scripts."""
    task = key.split("/")[0]
    if len(raw["objects"]) != 5:
        raise ValueError(f"expected 5 objects, got {len(raw['objects'])}")
    names = uav.rename_map(raw["question"])
    question = uav.resolve_text(raw["question"], names)
    options = [uav.resolve_text(option, names) for option in _options(raw)]
    videos, hints = [], []
    folders = {view: uav.frame_folder(root, raw["vid"], view) for view in ("A", "B")}
    if all(folder.is_dir() for folder in folders.values()):
        for i, (view, folder) in enumerate(folders.items()):
            count = sum(1 for _ in folder.iterdir())
            if not count:
                raise ValueError(f"frame folder {folder} is empty")
            videos.append(
                VideoRef(
                    index=i + 1, duration=count / uav_fps, name=f"view {view}", path=str(folder), label=f"view {view}"
                )
            )
        if all(uav.bbox_file(root, raw["vid"], view).is_file() for view in ("A", "B")):
            hints = uav.hint_lines(root, raw, names)
    else:  # media missing: the item is reported before the run and never runs; durations are placeholders
        videos = [
            VideoRef(index=i + 1, duration=1.0, name=f"view {v}", path=str(f), label=f"view {v}")
            for i, (v, f) in enumerate(folders.items())
        ]
    context = {"objects": hints} if hints else {}
    return Episode(
        id=key, task=task, question=question, options=options, videos=videos, answer=raw["answer"], context=context
    )


def _ccqa(raw: dict, root: Path, uav_fps: float, key: str) -> Episode:
    """Two cooking videos, a free-form question; the reference paragraph and scoring points are for the judge."""
    points = raw["scoring_points"]
    if not isinstance(points, list) or not points:
        raise ValueError("scoring_points must be a non-empty list")
    duration_a, duration_b = raw["duration"]
    videos = [_ref(1, raw["video A"], root, float(duration_a)), _ref(2, raw["video B"], root, float(duration_b))]
    return Episode(
        id=key,
        task="CCQA",
        question=raw["question"],
        videos=videos,
        answer=raw["answer"],
        reference={"scoring_points": points},
    )


_BUILDERS = {
    "BU": _multi_video,
    "NC": _multi_video,
    "CC": _multi_video,
    "PEA": _pea,
    "PI": _pi,
    "FSA": _fsa,
    "PSS": _pss,
    "MSR": _uav,
    "MOC": _uav,
    "CCQA": _ccqa,
}
