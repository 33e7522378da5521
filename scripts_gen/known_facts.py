"""A small script with known facts, rendered once per folder (render_scripts skips what is already there): the
fixture the perception and service tests and the service benchmarks check real perception against.

Video 1 (30 s): a cat on a sofa, someone says "good morning everyone"; later, silently, the cat drinks milk.
Video 2 (40 s): a dog runs in a park while someone says "the dog is very fast today".
Videos 3 and 4: two clips of one source film (offsets 0 and 25 s), so they share one rendered file.

    script, episode, folder = render_facts(Path("runs/facts"))   # needs ffmpeg, espeak-ng (`make setup`)
"""

from __future__ import annotations

from pathlib import Path

from agentcvr.episode import Episode
from agentcvr.script import Event, Script, VideoScript, write_jsonl

FACTS = {
    "cat": "A grey cat sleeps on a sofa.",
    "milk": "The cat drinks milk from a bowl.",
    "dog": "A brown dog runs in a park.",
    "car": "A red car stops at the gate.",
    "kite": "A yellow kite flies over the hill.",
}
SPEECH = {"morning": "Good morning everyone.", "dog": "The dog is very fast today.", "kite": "Look at the kite."}


def facts_script() -> Script:
    return Script(
        id="facts-1",
        task="NC",
        question="Which video shows a dog running?",
        options=["A. Video 1", "B. Video 2", "C. Video 3", "D. Video 4"],
        answer="B",
        videos=[
            VideoScript(
                index=1,
                duration=30,
                events=[
                    Event(start=0, end=10, visual=FACTS["cat"], speech=SPEECH["morning"]),
                    Event(start=20, end=25, visual=FACTS["milk"]),
                ],
            ),
            VideoScript(
                index=2, duration=40, events=[Event(start=5, end=12, visual=FACTS["dog"], speech=SPEECH["dog"])]
            ),
            VideoScript(
                index=3,
                duration=20,
                source="film",
                offset=0,
                events=[
                    Event(start=2, end=9, visual=FACTS["car"]),
                ],
            ),
            VideoScript(
                index=4,
                duration=15,
                source="film",
                offset=25,
                events=[
                    Event(start=3, end=10, visual=FACTS["kite"], speech=SPEECH["kite"]),
                ],
            ),
        ],
    )


def render_facts(base: Path) -> tuple[Script, Episode, Path]:
    """(script, episode with file paths, rendered folder), rendered under `base` once."""
    from scripts_gen.render import load_rendered, render_scripts

    folder = base / "rendered-facts"
    scripts = base / "facts.jsonl"
    if not scripts.exists():
        write_jsonl([facts_script()], scripts)
    render_scripts(scripts, folder, progress=False)
    ((script, episode),) = load_rendered(folder)
    return script, episode, folder
