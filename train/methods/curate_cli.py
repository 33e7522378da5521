"""`agentcvr curate-videos FOLDER`: OmniJigsaw's signal filters over a folder of real videos, one JSONL row each.

    agentcvr curate-videos data/raw --out runs/curation.jsonl
    agentcvr curate-videos data/raw --out runs/curation.jsonl -o max_static_share=0.6

Rows are appended as each video finishes; a rerun skips the paths already in --out, so an interrupted run resumes.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".mov", ".avi")


def curate_command(
    folder: Path = typer.Argument(..., help="Folder searched recursively for videos (mp4, mkv, webm, mov, avi)."),
    out: Path = typer.Option(Path("curation.jsonl"), help="JSONL report, one row per video; reruns resume it."),
    overrides: list[str] = typer.Option(
        [], "--override", "-o", help="Filter threshold as key=value, e.g. -o max_static_share=0.6 -o min_rms_db=-50"
    ),
) -> None:
    """Keep videos with motion, real audio and 30-80 % speech (OmniJigsaw's signal filters); report why others fail."""
    import yaml
    from rich.console import Console
    from rich.progress import track

    from train.methods.curation import CurationConfig, assess

    console = Console()
    if not folder.is_dir():
        raise typer.BadParameter(f"{folder} is not a folder", param_hint="FOLDER")
    values = {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or key not in CurationConfig.model_fields:
            raise typer.BadParameter(
                f"{item!r}: expected key=value with key one of {', '.join(CurationConfig.model_fields)}",
                param_hint="--override",
            )
        values[key] = yaml.safe_load(raw)
    cfg = CurationConfig(**values)
    videos = sorted(p for p in folder.rglob("*") if p.suffix.lower() in VIDEO_SUFFIXES and p.is_file())
    if not videos:
        raise typer.BadParameter(f"no video files ({', '.join(VIDEO_SUFFIXES)}) under {folder}", param_hint="FOLDER")
    done = (
        {json.loads(line)["path"] for line in out.read_text().splitlines() if line.strip()} if out.exists() else set()
    )
    todo = [v for v in videos if str(v) not in done]
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as handle:
        for video in track(todo, description="curating", console=console):
            handle.write(json.dumps(assess(video, cfg).row()) + "\n")
            handle.flush()
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    kept = sum(r["keep"] for r in rows)
    console.print(f"{kept}/{len(rows)} kept ({len(videos) - len(todo)} already in {out}); report: {out}", markup=False)
