"""Render semantic scripts into real MP4 files, so every synthetic episode can also run through real perception.

    agentcvr render scripts.jsonl out/ --fps 10       # or python -m scripts_gen.render scripts.jsonl out/

Each video's timeline is cut at every event boundary. A stretch with events shows a coloured background, a white
panel holding the events' visual descriptions as text, and one shape per event moving left to right while it lasts
(its colour is the first colour word of the description, if any); a stretch without events is a plain dark grey
screen. Speech is synthesized with espeak-ng and placed at the event's start on the audio track (sped up, within
reason, to fit the event). Durations are exact: round(duration * fps) frames and as many audio samples.

Clips that share a `source` and do not overlap inside it are rendered into one source file, so clip offsets are
exercised for real; otherwise each clip is its own file. Output: `<out>/<script id>/*.mp4`, `<out>/scripts.jsonl`
and `<out>/manifest.jsonl` (`{"id", "videos": [{"index", "path", "offset", "duration"}]}`, paths relative to
`<out>`). `load_rendered(out)` gives back (script, episode-with-paths) pairs.

Needs the Debian packages ffmpeg and espeak-ng; numpy and pillow.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, Field

from agentcvr.episode import Episode
from agentcvr.script import Event, Script, VideoScript, read_jsonl, write_jsonl
from scripts_gen.speech import RenderError, speech_track, write_wav

# Named colours a description may mention -> RGB of the shape drawn for it.
COLOURS = {
    "red": (210, 40, 40),
    "green": (40, 170, 60),
    "blue": (40, 90, 220),
    "yellow": (235, 210, 40),
    "orange": (240, 140, 30),
    "purple": (140, 60, 180),
    "pink": (240, 130, 180),
    "brown": (130, 80, 40),
    "black": (15, 15, 15),
    "white": (250, 250, 250),
    "grey": (128, 128, 128),
    "gray": (128, 128, 128),
}
# Muted scene backgrounds, picked per event from a hash of its text (neighbours always differ).
BACKGROUNDS = [
    (46, 74, 112),
    (60, 110, 80),
    (110, 70, 60),
    (90, 70, 120),
    (50, 100, 110),
    (120, 100, 50),
    (80, 80, 100),
    (100, 60, 90),
]
GAP = (40, 40, 40)
SHAPES = ("circle", "square", "triangle")


class RenderConfig(BaseModel):
    """How scripts become video files."""

    width: int = Field(default=640, ge=64, description="Frame width, px.")
    height: int = Field(default=360, ge=64, description="Frame height, px.")
    fps: int = Field(default=10, ge=1, le=60, description="Frames per second (scenes are slow; 10 keeps files small).")
    crf: int = Field(default=26, ge=0, le=51, description="x264 quality (lower is better).")
    preset: str = Field(default="veryfast", description="x264 preset.")
    keyframe_seconds: float = Field(default=2.0, gt=0, description="Keyframe interval: bounds the cost of a seek.")
    voice: str = Field(default="en-us", description="espeak-ng voice.")
    words_per_minute: int = Field(
        default=145, ge=80, le=450, description="Speaking rate before fitting (145: best tiny.en WER)."
    )
    max_words_per_minute: int = Field(default=260, ge=80, le=450, description="Fastest rate used to fit an event.")
    sample_rate: int = Field(default=22050, description="Audio track rate (espeak-ng's native rate).")
    audio: bool = Field(default=True, description="Write an audio track (silent where nothing is said).")
    font_size: int = Field(default=24, ge=8, description="Largest on-screen text size; shrunk to fit the panel.")
    threads: int = Field(default=1, ge=1, description="ffmpeg threads per file (the machine may be shared).")


@dataclass
class RenderedVideo:
    """One file written for one or more queryable videos (clips of the same source share a file)."""

    path: Path
    duration: float
    indices: list[int]
    offsets: list[float]
    speech_events: int = 0
    speech_overflows: int = 0  # utterances longer than their event even at the fastest rate
    seconds: float = 0.0


@dataclass
class RenderReport:
    out_dir: Path
    scripts: int = 0
    skipped: int = 0
    files: list[RenderedVideo] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def video_seconds(self) -> float:
        return sum(f.duration for f in self.files)


def require_tools(*names: str) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        raise RenderError(f"missing programs: {', '.join(missing)} (apt-get install ffmpeg espeak-ng)")


def render_scripts(
    scripts_path: str | Path,
    out_dir: str | Path,
    config: RenderConfig | None = None,
    limit: int | None = None,
    tasks: Iterable[str] | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> RenderReport:
    """Render every script of a JSONL file (optionally only some task kinds, at most `limit`) into `out_dir`.

    A script already in `out_dir/manifest.jsonl` is skipped when its files exist and its content is the one they
    were rendered from (the manifest keeps a hash), unless `overwrite`; a changed script is rendered again. Other
    scripts' entries in the folder are kept."""
    config = config or RenderConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wanted = set(tasks) if tasks else None
    scripts = [s for s in read_jsonl(Path(scripts_path)) if wanted is None or s.task in wanted][:limit]
    done = _manifest(out)
    report, started = RenderReport(out), time.perf_counter()
    kept: dict[str, Script] = {s.id: s for s in load_scripts(out)} if (out / "scripts.jsonl").is_file() else {}
    for number, script in enumerate(scripts, start=1):
        entry = done.get(script.id)
        if (
            not overwrite
            and entry
            and entry.get("script_sha256") == script_hash(script)
            and all((out / v["path"]).is_file() for v in entry["videos"])
        ):
            report.skipped += 1
            continue
        files = render_script(script, out, config)
        report.files.extend(files)
        report.scripts += 1
        kept[script.id] = script
        done[script.id] = _manifest_entry(script, files, out)
        _write_manifest(out, done)
        write_jsonl(kept.values(), out / "scripts.jsonl")
        if progress:
            seconds = sum(f.seconds for f in files)
            print(f"[{number}/{len(scripts)}] {script.id}: {len(files)} file(s), {seconds:.1f} s", file=sys.stderr)
    write_jsonl(kept.values(), out / "scripts.jsonl")
    report.seconds = time.perf_counter() - started
    return report


def render_script(script: Script, out_dir: str | Path, config: RenderConfig | None = None) -> list[RenderedVideo]:
    """Write the files of one script under `out_dir/<script id>/`."""
    config = config or RenderConfig()
    require_tools("ffmpeg", "espeak-ng")
    folder = Path(out_dir) / _safe(script.id)
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for group in _file_groups(script.videos):
        if len(group) == 1 and not group[0].offset:
            video = group[0]
            timeline, duration, offsets = video.events, video.duration, [0.0]
        else:
            timeline = [_shifted(e, v.offset) for v in group for e in v.events]
            duration = max(v.offset + v.duration for v in group)
            offsets = [v.offset for v in group]
        name = _safe(group[0].source) if group[0].source and len(group) > 1 else f"video_{group[0].index}"
        path = folder / f"{name}.mp4"
        seed = f"{script.id}/{name}"
        files.append(render_timeline(timeline, duration, path, config, seed, [v.index for v in group], offsets))
    return files


def render_timeline(
    events: list[Event],
    duration: float,
    path: Path,
    config: RenderConfig,
    seed: str = "",
    indices: list[int] | None = None,
    offsets: list[float] | None = None,
) -> RenderedVideo:
    """One MP4 of exactly `duration` seconds showing `events` (seconds in this file)."""
    started = time.perf_counter()
    rendered = RenderedVideo(path, duration, indices or [1], offsets or [0.0])
    frames = int(round(duration * config.fps))
    partial = path.with_name(f"{path.stem}.partial{path.suffix}")
    with tempfile.TemporaryDirectory(prefix="render-") as tmp:
        audio_path = None
        if config.audio:
            track, rendered.speech_events, rendered.speech_overflows = speech_track(
                events, duration, config.sample_rate, config.words_per_minute, config.max_words_per_minute, config.voice
            )
            audio_path = Path(tmp) / "audio.wav"
            write_wav(audio_path, track, config.sample_rate)
        command = [
            "ffmpeg",
            "-y",
            "-loglevel",
            "error",
            "-threads",
            str(config.threads),
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-s",
            f"{config.width}x{config.height}",
            "-r",
            str(config.fps),
            "-i",
            "-",
        ]
        if audio_path:
            command += ["-i", str(audio_path), "-c:a", "aac", "-b:a", "64k"]
        command += [
            "-c:v",
            "libx264",
            "-preset",
            config.preset,
            "-crf",
            str(config.crf),
            "-pix_fmt",
            "yuv420p",
            "-g",
            str(max(1, int(config.keyframe_seconds * config.fps))),
            "-threads",
            str(config.threads),
            "-t",
            f"{frames / config.fps:.6f}",
            "-movflags",
            "+faststart",
            str(partial),
        ]
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stdin is not None
        try:
            painter = _Painter(events, config, seed)
            for i in range(frames):
                process.stdin.write(painter.frame(i / config.fps).tobytes())
            process.stdin.close()
        except BrokenPipeError:
            pass
        error = process.stderr.read().decode() if process.stderr else ""
        if process.wait() != 0:
            partial.unlink(missing_ok=True)
            raise RenderError(f"ffmpeg failed writing {path}: {error.strip()[-500:]}")
        partial.replace(path)  # a killed render leaves no file that looks finished
    rendered.seconds = time.perf_counter() - started
    return rendered


class _Painter:
    """Frames of a timeline: a static base image per stretch between event boundaries, plus moving shapes."""

    def __init__(self, events: list[Event], config: RenderConfig, seed: str):
        self.events, self.config, self.seed = events, config, seed
        cuts = sorted({0.0, *(e.start for e in events), *(e.end for e in events)})
        self.stretches = list(zip(cuts, cuts[1:] + [float("inf")], strict=True))
        self._bases: dict[int, Any] = {}
        self._sprites: dict[int, Any] = {}
        self._background_of: dict[int, tuple[int, int, int]] = {}
        previous = None
        for i, event in enumerate(events):  # neighbours never share a background; shapes stand out from theirs
            shape = _shape_colour(event.visual)
            start = _hash_int(f"{seed}/{i}/{event.visual}") % len(BACKGROUNDS)
            ring = BACKGROUNDS[start:] + BACKGROUNDS[:start]
            choice = next((c for c in ring if c != previous and _far(c, shape)), ring[ring[0] == previous])
            self._background_of[i] = previous = choice

    def frame(self, t: float):
        stretch = next(i for i, (s, e) in enumerate(self.stretches) if s <= t < e)
        active = [i for i, e in enumerate(self.events) if e.start <= t < e.end]
        if stretch not in self._bases:
            self._bases[stretch] = self._base(active)
        image = self._bases[stretch].copy()
        height, width = image.shape[:2]
        lane_top, lane_height = int(height * 0.62), int(height * 0.34)
        for lane, i in enumerate(active):
            sprite, mask = self._sprite(i)
            size = sprite.shape[0]
            event = self.events[i]
            progress = (t - event.start) / max(event.end - event.start, 1e-6)
            x = int(progress * (width - size))
            lane_size = lane_height // max(1, len(active))
            y = lane_top + lane * lane_size + (lane_size - size) // 2
            y = min(max(0, y), height - size)
            region = image[y : y + size, x : x + size]
            region[mask] = sprite[mask]
        return image

    def _base(self, active: list[int]):
        import numpy as np
        from PIL import Image, ImageDraw

        config = self.config
        colour = self._background_of[active[0]] if active else GAP
        image = Image.new("RGB", (config.width, config.height), colour)
        if active:
            draw = ImageDraw.Draw(image)
            margin = int(config.width * 0.03)
            panel = (margin, margin, config.width - margin, int(config.height * 0.58))
            draw.rounded_rectangle(panel, radius=8, fill=(245, 245, 245))
            texts = [self.events[i].visual for i in active]
            font, lines = _fit_text(
                texts, panel[2] - panel[0] - 2 * margin, panel[3] - panel[1] - margin, config.font_size
            )
            draw.multiline_text(
                (panel[0] + margin, panel[1] + margin // 2),
                "\n".join(lines),
                font=font,
                fill=(10, 10, 10),
                spacing=max(2, font.size // 3),
            )
        return np.asarray(image, dtype=np.uint8)

    def _sprite(self, i: int):
        if i not in self._sprites:
            import numpy as np
            from PIL import Image, ImageDraw

            event = self.events[i]
            size = max(16, int(self.config.height * 0.22))
            colour = _shape_colour(event.visual)
            shape = SHAPES[_hash_int(f"{self.seed}/{event.visual}") % len(SHAPES)]
            mask = Image.new("L", (size, size), 0)
            draw = ImageDraw.Draw(mask)
            if shape == "circle":
                draw.ellipse((0, 0, size - 1, size - 1), fill=255)
            elif shape == "square":
                draw.rectangle((size // 8, size // 8, size - size // 8, size - size // 8), fill=255)
            else:
                draw.polygon([(size // 2, 0), (size - 1, size - 1), (0, size - 1)], fill=255)
            sprite = np.empty((size, size, 3), dtype=np.uint8)
            sprite[:] = colour
            self._sprites[i] = (sprite, np.asarray(mask) > 127)
        return self._sprites[i]


def _shape_colour(visual: str) -> tuple[int, int, int]:
    """The first colour word of a description, else one picked from its hash."""
    named = next((COLOURS[w] for w in re.findall(r"[a-z]+", visual.lower()) if w in COLOURS), None)
    return named or list(COLOURS.values())[_hash_int(visual) % 8]


def _far(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    """Two colours some channel of which differs by more than 60 (so motion detection sees the shape)."""
    return max(abs(x - y) for x, y in zip(a, b, strict=True)) > 60


def _fit_text(texts: list[str], width: int, height: int, largest: int):
    """The largest font (down to 10 px) at which the wrapped texts fit the box, and the wrapped lines.

    Words are drawn two spaces apart: the bundled font sets words so tightly that OCR runs some together."""
    from PIL import ImageFont

    for size in range(largest, 9, -2):
        font = ImageFont.load_default(size=size)
        line_height = size + max(2, size // 3)
        chars = max(8, int(width / max(1.0, font.getlength("abcdefghij  klmnopqrst") / 22)))
        while chars > 8:
            lines = [line.replace(" ", "  ") for text in texts for line in textwrap.wrap(text, chars)]
            if all(font.getlength(line) <= width for line in lines):
                break
            chars -= 2
        if len(lines) * line_height <= height:
            return font, lines
    return font, lines[: max(1, height // line_height)]


def _file_groups(videos: list[VideoScript]) -> list[list[VideoScript]]:
    """Videos sharing a source whose clips do not overlap there form one file; every other video is its own."""
    groups: dict[str, list[VideoScript]] = {}
    singles = []
    for video in videos:
        (groups.setdefault(video.source, []) if video.source else singles).append(video)
    result = [[v] for v in singles]
    for clips in groups.values():
        ordered = sorted(clips, key=lambda v: v.offset)
        disjoint = all(a.offset + a.duration <= b.offset + 1e-6 for a, b in zip(ordered, ordered[1:], strict=False))
        result.extend([ordered] if disjoint and len(ordered) > 1 else [[v] for v in clips])
    return sorted(result, key=lambda group: min(v.index for v in group))


def _shifted(event: Event, offset: float) -> Event:
    return event.model_copy(update={"start": event.start + offset, "end": event.end + offset})


def _manifest_entry(script: Script, files: list[RenderedVideo], out: Path) -> dict:
    videos = []
    for rendered in files:
        for index, offset in zip(rendered.indices, rendered.offsets, strict=True):
            duration = script.videos[index - 1].duration
            videos.append(
                {"index": index, "path": str(rendered.path.relative_to(out)), "offset": offset, "duration": duration}
            )
    return {
        "id": script.id,
        "task": script.task,
        "script_sha256": script_hash(script),
        "videos": sorted(videos, key=lambda v: v["index"]),
    }


def script_hash(script: Script) -> str:
    """What a rendering was made from: a changed script (question, timeline or speech) gets a new hash."""
    return hashlib.sha256(script.model_dump_json().encode()).hexdigest()


def _manifest(out: Path) -> dict[str, dict]:
    from agentcvr.perception.real import MANIFEST, read_manifest

    return read_manifest(out) if (out / MANIFEST).is_file() else {}


def _write_manifest(out: Path, entries: dict[str, dict]) -> None:
    partial = out / "manifest.jsonl.tmp"
    partial.write_text("".join(json.dumps(entry) + "\n" for entry in entries.values()))
    partial.replace(out / "manifest.jsonl")


def load_scripts(out_dir: str | Path) -> list[Script]:
    return list(read_jsonl(Path(out_dir) / "scripts.jsonl"))


def load_rendered(out_dir: str | Path) -> list[tuple[Script, Episode]]:
    """(script, episode-with-paths) pairs of a rendered folder; each episode's videos carry absolute paths and
    clip offsets. Raises FileNotFoundError when the folder has no manifest."""
    from agentcvr.perception.real import attach_videos, read_manifest

    out = Path(out_dir).resolve()
    rendered = read_manifest(out)
    scripts = [script for script in load_scripts(out) if script.id in rendered]
    episodes = attach_videos([script.episode for script in scripts], out)
    return list(zip(scripts, episodes, strict=True))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "video"


def _hash_int(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")


def render_command(
    scripts: Annotated[Path, typer.Argument(help="Scripts JSONL (from gen-scripts).")],
    out: Annotated[Path, typer.Argument(help="Folder for the MP4s, scripts.jsonl and manifest.jsonl.")],
    task: Annotated[list[str] | None, typer.Option(help="Only these task kinds (repeatable).")] = None,
    limit: Annotated[int | None, typer.Option(help="Render at most this many scripts.", min=1)] = None,
    fps: Annotated[int, typer.Option(help="Frames per second.", min=1, max=60)] = 10,
    width: Annotated[int, typer.Option(help="Frame width, px.", min=64)] = 640,
    height: Annotated[int, typer.Option(help="Frame height, px.", min=64)] = 360,
    audio: Annotated[bool, typer.Option(help="Write an audio track with the espeak-ng speech.")] = True,
    overwrite: Annotated[bool, typer.Option(help="Render again scripts already in the manifest.")] = False,
) -> None:
    """Render scripts into real MP4 files (scenes, on-screen text, espeak-ng speech) for `run --perception real`."""
    if not scripts.is_file():
        raise typer.BadParameter(f"scripts file not found: {scripts}", param_hint="SCRIPTS")
    config = RenderConfig(fps=fps, width=width, height=height, audio=audio)
    try:
        report = render_scripts(scripts, out, config, limit=limit, tasks=task, overwrite=overwrite)
    except RenderError as error:
        raise typer.BadParameter(str(error)) from None
    overflows = sum(f.speech_overflows for f in report.files)
    print(
        f"rendered {report.scripts} script(s) ({report.skipped} already there), {len(report.files)} files, "
        f"{report.video_seconds:.0f} s of video in {report.seconds:.1f} s -> {report.out_dir}"
        + (f"; {overflows} utterance(s) longer than their event" if overflows else "")
    )


if __name__ == "__main__":
    typer.run(render_command)
