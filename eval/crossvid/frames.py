"""Frames the way the official CrossVid scripts pick and encode them, with a disk cache shared by runs and models.

- `whole_video(path, n)`: `linspace(0, N-1, min(n, N))` frame indices, deduplicated (video2frames.py).
- `video_intervals(path, n, groups)`: `n` frames shared by the groups in proportion to their length (largest
  remainder), each group sampled uniformly over its joined sub-intervals; start >= end dropped (interval2frames.py).
- `frame_folder(path, n)`: `linspace(0, len-1, n)` over the sorted file names, duplicates kept (frame_bbox.py).
Frames are shrunk only when the long side is over 360 px (INTER_AREA, `int()` sizes) and encoded as JPEG with
OpenCV's defaults, as base64 strings. Results are cached by (file content fingerprint, sampling, n, size).
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import math
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from agentcvr.perception.frames import load_decord
from agentcvr.perception.media import fingerprint

LONG_SIDE = 360


@dataclass(frozen=True)
class Sampled:
    """base64 JPEG frames per group (one group for a whole video or a folder) and their timestamps in seconds."""

    groups: list[list[str]]
    times: list[list[float]]


def allocate(durations: list[float], total: int) -> list[int]:
    """Largest-remainder split of `total` frames by duration.

    >>> allocate([3.0, 2.0, 1.0], 10)
    [5, 3, 2]
    """
    whole = sum(durations)
    if whole == 0:
        return [0] * len(durations)
    ideal = [d / whole * total for d in durations]
    parts = [math.floor(x) for x in ideal]
    remaining = total - sum(parts)
    for i in sorted(range(len(ideal)), key=lambda i: -(ideal[i] - math.floor(ideal[i])))[: max(0, remaining)]:
        parts[i] += 1
    return parts


def _linspace_int(stop: float, n: int) -> list[int]:
    """`np.linspace(0, stop, n, dtype=int)`."""
    import numpy as np

    return np.linspace(0, stop, num=n, dtype=np.int32).tolist()


def _encode(image_bgr) -> str:
    import cv2

    height, width = image_bgr.shape[:2]
    if max(height, width) > LONG_SIDE:
        scale = LONG_SIDE / max(height, width)
        image_bgr = cv2.resize(image_bgr, (int(width * scale), int(height * scale)), interpolation=cv2.INTER_AREA)
    ok, buffer = cv2.imencode(".jpg", image_bgr)
    if not ok:
        raise ValueError("JPEG encoding failed")
    return base64.b64encode(buffer).decode("ascii")


def _rgb_to_b64(frames) -> list[str]:
    import cv2

    return [_encode(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR)) for frame in frames]


def whole_video(path: str, n: int) -> Sampled:
    import numpy as np

    reader = load_decord().VideoReader(path, num_threads=1)
    total = len(reader)
    if total == 0 or reader.get_avg_fps() == 0:
        raise ValueError(f"{path}: invalid video")
    indices = np.unique(np.clip(_linspace_int(total - 1, min(n, total)), 0, total - 1)).tolist()
    times = reader.get_frame_timestamp(indices)[:, 0].tolist()
    return Sampled([_rgb_to_b64(reader.get_batch(indices).asnumpy())], [times])


def video_intervals(path: str, n: int, groups: list[list[list[float]]]) -> Sampled:
    reader = load_decord().VideoReader(path, num_threads=1)
    total, fps = len(reader), reader.get_avg_fps()
    if total == 0 or fps == 0:
        raise ValueError(f"{path}: invalid video")
    groups = [g if g and isinstance(g[0], list | tuple) else [g] for g in groups]  # [s, e] or [[s, e], ...]
    valid = [[(float(seg[0]), float(seg[1])) for seg in segs if len(seg) == 2 and seg[0] < seg[1]] for segs in groups]
    valid = [segs for segs in valid if segs]
    counts = allocate([sum(e - s for s, e in segs) for segs in valid], n)
    out_frames, out_times = [], []
    for segs, k in zip(valid, counts, strict=True):
        if k <= 0:
            out_frames.append([])
            out_times.append([])
            continue
        bounds = [0.0]
        for s, e in segs:
            bounds.append(bounds[-1] + e - s)
        virtual = _linspace_float(bounds[-1], k) if k > 1 else [0.0]
        indices = set()
        for t in virtual:
            j = max(0, min(bisect.bisect_right(bounds, t) - 1, len(segs) - 1))
            actual = max(0.0, min(segs[j][0] + t - bounds[j], total / fps))
            index = int(actual * fps)
            if 0 <= index < total:
                indices.add(index)
        chosen = sorted(indices)
        if not chosen:
            out_frames.append([])
            out_times.append([])
            continue
        out_times.append(reader.get_frame_timestamp(chosen)[:, 0].tolist())
        out_frames.append(_rgb_to_b64(reader.get_batch(chosen).asnumpy()))
    return Sampled(out_frames, out_times)


def _linspace_float(stop: float, n: int) -> list[float]:
    import numpy as np

    return np.linspace(0, stop, num=n).tolist()


def frame_folder(path: str, n: int) -> Sampled:
    import cv2

    files = sorted(os.listdir(path))
    indices = _linspace_int(len(files) - 1, n)
    images = []
    for i in indices:
        image = cv2.imread(os.path.join(path, files[i]))
        if image is None:
            raise FileNotFoundError(f"cannot read frame {os.path.join(path, files[i])}")
        images.append(_encode(image))
    return Sampled([images], [[float(i) for i in indices]])


class FrameCache:
    """Sampled frames by (content fingerprint, sampling, parameters): in memory (a few entries) and on disk as JSON."""

    def __init__(self, cache_dir: Path | None, memory_items: int = 64):
        self.cache_dir = cache_dir
        self.memory_items = memory_items
        self._memory: OrderedDict[str, Sampled] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, kind: str, path: str, n: int, groups: list | None = None) -> Sampled:
        identity = _folder_identity(path) if kind == "folder" else fingerprint(path)
        key = hashlib.sha256(json.dumps([kind, identity, n, groups, LONG_SIDE]).encode()).hexdigest()[:32]
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                self.hits += 1
                return self._memory[key]
        sampled = self._read(key)
        if sampled is None:
            self.misses += 1
            if kind == "folder":
                sampled = frame_folder(path, n)
            elif kind == "intervals":
                sampled = video_intervals(path, n, groups or [])
            else:
                sampled = whole_video(path, n)
            self._write(key, sampled)
        else:
            self.hits += 1
        with self._lock:
            self._memory[key] = sampled
            while len(self._memory) > self.memory_items:
                self._memory.popitem(last=False)
        return sampled

    def _read(self, key: str) -> Sampled | None:
        if self.cache_dir is None or not (file := self.cache_dir / f"{key}.json").is_file():
            return None
        try:
            data = json.loads(file.read_text())
            return Sampled(data["groups"], data["times"])
        except (OSError, ValueError, KeyError):
            file.unlink(missing_ok=True)  # a damaged entry is decoded again
            return None

    def _write(self, key: str, sampled: Sampled) -> None:
        if self.cache_dir is None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        partial = self.cache_dir / f"{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        partial.write_text(json.dumps({"groups": sampled.groups, "times": sampled.times}))
        partial.replace(self.cache_dir / f"{key}.json")


def _folder_identity(path: str) -> list:
    """A frame folder's identity for the cache: its sorted file names, sizes and modification times."""
    entries = sorted(os.scandir(path), key=lambda e: e.name)
    return [path, [(e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in entries]]
