"""The embedded CPU visual agent: turns sampled frames into honest, timestamped text.

No captioning model can be had offline (see shared/notes/offline-models.md), so this describer reports only what it
measures in the pixels:

- scenes: consecutive frames whose colour histograms stay close form a scene; with access to the video, each cut is
  located to the frame by bisection between the two samples that straddle it;
- on-screen text: tesseract OCR (Debian `tesseract-ocr`) on one frame per scene, words below a confidence cut dropped;
- dominant colours: the named colours covering at least 10 % of the scene;
- motion: how much changes between frames, and where a moving object goes (background subtraction over the scene).

    describer = FrameDescriber()
    describer.describe(frames, focus="what the animal does")
    # '[4.0s - 12.5s] Text on screen: "A heron spears a fish."; colours: dark green 62%, white 31%; a grey object
    #  moves left to right.'

Scenes with no text, no motion and one flat colour are left out; when nothing is left the answer is the simulator's
"No significant action observed." At most `max_scenes` scenes are reported, the most relevant to the focus kept
(`agentcvr.relevance`, the simulator's ranking, with term rarities over the look's scenes). ImageNet labels
(EfficientNet-lite0) were left out: on rendered scenes they name objects that are not there, and on real footage their
top-1 is often wrong (notes), i.e. not honest signal.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from agentcvr import cancel
from agentcvr.perception.frames import Frames
from agentcvr.relevance import most_relevant, terms

NO_VISUAL = "No significant action observed."
_THUMB = (64, 36)  # (width, height) of the thumbnails scenes and motion are measured on

# A frame probe decodes the frame shown at a clip time: (RGB image, that frame's own clip time). Cuts use it.
FrameProbe = Callable[[float], tuple[Any, float]]


class DescriberConfig(BaseModel):
    """What the frame describer measures and how."""

    ocr: bool = Field(default=True, description="Read on-screen text with tesseract.")
    ocr_language: str = Field(default="eng", description="tesseract language pack(s), e.g. 'eng+deu'.")
    ocr_min_confidence: float = Field(default=50.0, description="Drop OCR words below this confidence (0-100).")
    ocr_workers: int = Field(default=2, ge=1, description="tesseract processes run at once.")
    ocr_timeout: float = Field(default=20.0, gt=0, description="Seconds one tesseract run may take.")
    cut_threshold: float = Field(default=0.35, gt=0, description="Histogram L1 distance (0-2) that makes a cut.")
    refine_cuts: bool = Field(default=True, description="Bisect between samples to place each cut on its frame.")
    colours: bool = Field(default=True, description="Report dominant named colours.")
    motion: bool = Field(default=True, description="Report movement and the direction of a moving object.")
    max_scenes: int = Field(default=8, ge=1, description="Scenes reported per call (most focus-relevant kept).")


@dataclass
class Scene:
    """Consecutive sampled frames that look alike: indices into the frames and the clip times it covers."""

    first: int
    last: int
    start: float
    end: float
    text: str = ""
    colours: list[tuple[str, float]] | None = None
    motion: str = ""

    @property
    def empty(self) -> bool:
        flat = bool(self.colours) and self.colours[0][1] >= 0.9
        return not self.text and not self.motion and flat


class FrameDescriber:
    """Frames in, text out; thread-safe. `describe` is the whole API."""

    def __init__(self, config: DescriberConfig | None = None):
        self.config = config or DescriberConfig()
        if self.config.ocr and shutil.which("tesseract") is None:
            raise RuntimeError(
                "tesseract not found: apt-get install tesseract-ocr tesseract-ocr-eng (or DescriberConfig(ocr=False))"
            )
        self._pool = ThreadPoolExecutor(self.config.ocr_workers, thread_name_prefix="ocr")

    def describe(self, frames: Frames, focus: str = "", probe: FrameProbe | None = None, step: float = 0.0) -> str:
        """Timestamped text for the frames of one interval; `probe` and `step` (seconds per video frame) let
        cuts be placed on their frame."""
        return self.render(self.scenes(frames, probe, step), focus)

    def scenes(self, frames: Frames, probe: FrameProbe | None = None, step: float = 0.0) -> list[Scene]:
        import numpy as np

        thumbs = np.stack([_thumbnail(image) for image in frames.images])
        hists = [_histogram(t) for t in thumbs]
        scenes, first = [], 0
        bounds = [frames.start]
        for i in range(1, len(thumbs)):
            if _distance(hists[i - 1], hists[i]) > self.config.cut_threshold:
                cut = (frames.times[i - 1] + frames.times[i]) / 2
                if probe is not None and step > 0 and self.config.refine_cuts:
                    cut = _bisect(probe, frames.times[i - 1], frames.times[i], hists[i - 1], hists[i], step)
                bounds.append(cut)
                scenes.append((first, i - 1))
                first = i
        scenes.append((first, len(thumbs) - 1))
        bounds.append(frames.end)
        result = [Scene(a, b, round(bounds[k], 2), round(bounds[k + 1], 2)) for k, (a, b) in enumerate(scenes)]
        texts = self._ocr([frames.images[(s.first + s.last) // 2] for s in result]) if self.config.ocr else []
        for k, scene in enumerate(result):
            scene.text = texts[k] if texts else ""
            scene_thumbs = thumbs[scene.first : scene.last + 1]
            if self.config.colours:
                scene.colours = dominant_colours(scene_thumbs)
            if self.config.motion:
                scene.motion = describe_motion(scene_thumbs)
        return _merge_same(result)

    def render(self, scenes: list[Scene], focus: str = "") -> str:
        shown = [s for s in scenes if not s.empty]
        kept = most_relevant([terms(s.text) for s in shown], focus, self.config.max_scenes)
        shown = [shown[k] for k in kept]
        if not shown:
            return NO_VISUAL
        return "\n".join(f"[{s.start:.1f}s - {s.end:.1f}s] {_scene_text(s)}" for s in shown)

    def _ocr(self, images: list[Any]) -> list[str]:
        token = cancel.current()

        def read(image: Any) -> str:
            if token is not None:
                token.check()  # between frames: a stopped run reads no more of them
            return self.read_text(image)

        return list(self._pool.map(read, images))

    def read_text(self, image: Any) -> str:
        """The words tesseract reads in one RGB frame with at least the configured confidence."""
        from PIL import Image

        picture = Image.fromarray(image).convert("L")
        if picture.height < 600:  # tesseract reads best with glyphs ~30 px high
            picture = picture.resize((picture.width * 2, picture.height * 2), Image.Resampling.BICUBIC)
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG")
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}  # one core per process; the pool runs several
        try:
            result = subprocess.run(
                ["tesseract", "stdin", "stdout", "-l", self.config.ocr_language, "--psm", "11", "tsv"],
                input=buffer.getvalue(),
                capture_output=True,
                timeout=self.config.ocr_timeout,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return ""
        if result.returncode != 0:
            raise RuntimeError(f"tesseract failed: {result.stderr.decode(errors='replace').strip()[-300:]}")
        return _tsv_text(result.stdout.decode(errors="replace"), self.config.ocr_min_confidence)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


# tesseract's LSTM model writes typographic quotes for straight ones; the text it reads was typed with straight ones
_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"'})


def _tsv_text(tsv: str, min_confidence: float) -> str:
    """Words of tesseract TSV output in reading order, joined with spaces, low-confidence words dropped."""
    words = []
    for line in tsv.splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) < 12 or not cells[11].strip():
            continue
        try:
            confidence = float(cells[10])
        except ValueError:
            continue
        if confidence >= min_confidence:
            words.append(cells[11].strip().translate(_QUOTES))
    text = " ".join(words)
    return text if re.search(r"[A-Za-z0-9]{2,}", text) else ""


def _scene_text(scene: Scene) -> str:
    """'Text on screen: "..."; colours: white 48%, dark blue 43%; a brown object moves left to right.'"""
    parts = []
    if scene.text:
        parts.append(f'Text on screen: "{scene.text}"')
    if scene.colours:
        parts.append("colours: " + ", ".join(f"{name} {share:.0%}" for name, share in scene.colours))
    if scene.motion:
        parts.append(scene.motion[0].lower() + scene.motion[1:])
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _merge_same(scenes: list[Scene]) -> list[Scene]:
    """Neighbouring scenes with the same text are one scene cut by a lighting or camera change."""
    merged: list[Scene] = []
    for scene in scenes:
        previous = merged[-1] if merged else None
        if previous is not None and scene.text and scene.text == previous.text:
            previous.last, previous.end = scene.last, scene.end
            previous.motion = previous.motion or scene.motion
        else:
            merged.append(scene)
    return merged


def _thumbnail(image: Any):
    """A (36, 64, 3) float32 thumbnail: block means, cheap and alias-free enough for statistics."""
    import numpy as np

    height, width = image.shape[:2]
    ys = np.linspace(0, height, _THUMB[1] + 1).astype(int)
    xs = np.linspace(0, width, _THUMB[0] + 1).astype(int)
    rows = np.add.reduceat(image.astype(np.float32), ys[:-1], axis=0) / np.diff(ys)[:, None, None]
    return np.add.reduceat(rows, xs[:-1], axis=1) / np.diff(xs)[None, :, None]


def _histogram(thumb: Any):
    """A normalized joint RGB histogram, 4 bins per channel."""
    import numpy as np

    bins = np.clip(thumb // 64, 0, 3).astype(int)
    codes = bins[..., 0] * 16 + bins[..., 1] * 4 + bins[..., 2]
    counts = np.bincount(codes.ravel(), minlength=64).astype(np.float32)
    return counts / counts.sum()


def _distance(a: Any, b: Any) -> float:
    return float(abs(a - b).sum())


def _bisect(probe: FrameProbe, t0: float, t1: float, h0: Any, h1: Any, step: float) -> float:
    """The clip time of the first frame that looks like the later scene, between samples at t0 and t1
    (`step`: seconds per frame)."""
    for _ in range(32):  # a guard: (t1 - t0) at least halves each time
        if t1 - t0 <= step:
            break
        middle = (t0 + t1) / 2
        image, shown = probe(middle)  # the frame on screen at `middle` began at `shown` <= middle
        h = _histogram(_thumbnail(image))
        if _distance(h, h0) <= _distance(h, h1):
            t0 = middle
        else:
            t1 = max(t0, shown)
    return t1


def colour_name(rgb: Any) -> str:
    """A coarse colour name for one RGB triple (0-255).

    >>> colour_name((210, 40, 40)), colour_name((250, 250, 250)), colour_name((46, 74, 112))
    ('red', 'white', 'dark blue')
    """
    import colorsys

    r, g, b = (float(c) / 255 for c in rgb)
    hue, saturation, value = colorsys.rgb_to_hsv(r, g, b)
    hue *= 360
    if value < 0.18:
        return "black"
    if saturation < 0.2:
        return "white" if value > 0.85 else "grey" if value > 0.35 else "dark grey"
    limits = [
        (15, "red"),
        (40, "orange"),
        (70, "yellow"),
        (170, "green"),
        (200, "cyan"),
        (260, "blue"),
        (290, "purple"),
        (340, "pink"),
        (361, "red"),
    ]
    name = next(label for limit, label in limits if hue < limit)
    if name == "orange" and value < 0.6:
        return "brown"
    return f"dark {name}" if value < 0.45 else name


def dominant_colours(thumbs: Any, minimum: float = 0.1, top: int = 3) -> list[tuple[str, float]]:
    """Named colours covering at least `minimum` of the pixels of some thumbnails, largest first."""
    import numpy as np

    pixels = thumbs.reshape(-1, 3)
    pixels = pixels[:: max(1, len(pixels) // 4000)]
    quantized = (pixels // 16).astype(int)  # name each occupied cell of 16^3 once, by its pixels' mean colour
    _, inverse, counts = np.unique(quantized @ np.array([256, 16, 1]), return_inverse=True, return_counts=True)
    means = np.stack([np.bincount(inverse, weights=pixels[:, c]) for c in range(3)], axis=1) / counts[:, None]
    shares: dict[str, float] = {}
    for mean, count in zip(means, counts, strict=True):
        name = colour_name(mean)
        shares[name] = shares.get(name, 0.0) + count / len(pixels)
    ranked = sorted(shares.items(), key=lambda kv: -kv[1])
    return [(name, share) for name, share in ranked[:top] if share >= minimum]


def describe_motion(thumbs: Any) -> str:
    """'' for a still scene; else how much moves and, when an object's path is clear, its colour and direction."""
    import numpy as np

    if len(thumbs) < 2:
        return ""
    changed = float(np.mean(np.abs(np.diff(thumbs, axis=0)).max(axis=3) > 25))  # colour-aware: any channel
    if changed < 0.004:
        return ""
    if len(thumbs) < 3:
        return "something moves"
    background = np.median(thumbs, axis=0)
    masks = np.abs(thumbs - background).max(axis=3) > 40  # (N, h, w): what differs from the scene's background
    centres = []
    for mask in masks:
        ys, xs = np.nonzero(mask)
        if 0 < len(xs) < mask.size * 0.5:
            centres.append((xs.mean() / mask.shape[1], ys.mean() / mask.shape[0]))
    if len(centres) < 2:
        return "the picture changes throughout" if changed > 0.2 else "something moves"
    (x0, y0), (x1, y1) = centres[0], centres[-1]
    moving = np.concatenate([thumbs[i][masks[i]] for i in range(len(thumbs))])
    colour = colour_name(np.median(moving, axis=0)) if len(moving) else ""
    thing = f"{'an' if colour[:1] in ('', 'o') else 'a'} {colour} object".replace("  ", " ")
    horizontal = "left to right" if x1 - x0 > 0.1 else "right to left" if x0 - x1 > 0.1 else ""
    vertical = "downwards" if y1 - y0 > 0.15 else "upwards" if y0 - y1 > 0.15 else ""
    direction = " and ".join(d for d in (horizontal, vertical) if d)
    return f"{thing} moves {direction}" if direction else f"{thing} moves"
