"""The HTML trace viewer: the question, each step with its action, thumbnails of the frames the visual agent saw, the
observation or error, and the answer and timings. Rendered with jinja2 autoescaping (model output is untrusted)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from serve.schemas import AnswerResponse

_env = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html", "j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _call(step) -> str:
    if step.tool is None:
        return step.kind.replace("_", " ")
    args = step.arguments
    if step.tool == "answer":
        return f"answer({args.get('answer', '')!r})"
    interval = f"video {args.get('video')}, {float(args.get('start', 0)):g}–{float(args.get('end', 0)):g} s"
    focus = f", focus {args['focus']!r}" if args.get("focus") else ""
    frames = f", {args['num_frames']} frames" if "num_frames" in args else ""
    return f"{step.tool}({interval}{frames}{focus})"


def render_trace(response: AnswerResponse, frames: dict[int, list[tuple[int, float]]], signed: str = "") -> str:
    """The viewer page; `frames` maps step index -> [(k, time)] of stored thumbnails (served by /frames/...), whose
    links carry `signed` (the page's own signed-link query, so a browser without the key loads them too)."""
    template = _env.get_template("trace.html.j2")
    return template.render(r=response, frames=frames, call=_call, chosen=_chosen(response), signed=signed)


def _chosen(response: AnswerResponse) -> str | None:
    """The option a one-letter answer picks ('B' -> 'B. Video 2'), to show beside it."""
    answer = (response.answer or "").strip()
    if len(answer) != 1:
        return None
    return next((o for o in response.options if o.strip().upper().startswith(answer.upper())), None)
