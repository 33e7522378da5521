"""`agentcvr serve` (the HTTP service) and `agentcvr ask` (one question from the command line, through the same
request -> episode -> agent path as `POST /answer`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentcvr.interfaces import MAX_TURNS_HELP
from agentcvr.terminal import fail
from serve.settings import default_data_dir

console = Console()


def serve_command(
    host: Annotated[str, typer.Option(help="Interface to listen on (0.0.0.0 for all).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[int, typer.Option(help="Server processes; each loads its own models.", min=1)] = 1,
    settings: Annotated[Path | None, typer.Option(help="YAML/JSON settings file (AGENTCVR_* variables win).")] = None,
    media_root: Annotated[Path | None, typer.Option(help="Folder that request video paths are confined to.")] = None,
    policy: Annotated[
        str | None, typer.Option(help="Master policy: gguf (default), trained, openai:MODEL, hf:DIR.")
    ] = None,
    trace_dir: Annotated[
        Path | None,
        typer.Option(
            help=f"Folder of the trace store (traces.sqlite) and uploads; default the per-user data folder "
            f"{default_data_dir()} ($XDG_DATA_HOME/agentcvr/serve)."
        ),
    ] = None,
) -> None:
    """Serve POST /answer, /answer/stream, /traces/{id} and /view, /healthz, /readyz, /metrics (docs at /docs)."""
    import os

    import uvicorn

    from serve.settings import load_settings

    given = {"media_root": media_root, "policy": policy, "trace_dir": trace_dir}
    if trace_dir is not None:
        given["upload_dir"] = trace_dir / "uploads"
    overrides = {k: v for k, v in given.items() if v is not None}
    try:
        resolved = load_settings(settings, **overrides)
    except (ValueError, OSError) as error:
        fail(console, f"settings: {error}")
    # Worker processes read their settings from the environment: hand the resolved ones over as AGENTCVR_* variables.
    for name, value in resolved.model_dump(mode="json", exclude_none=True).items():
        if name == "api_key":
            value = resolved.api_key.get_secret_value() if resolved.api_key else None
        if value is not None:
            os.environ[f"AGENTCVR_{name.upper()}"] = str(value)
    os.environ.pop("AGENTCVR_SETTINGS_FILE", None)
    console.print(f"serving on http://{host}:{port} (docs: /docs), media root {resolved.media_root}", markup=False)
    uvicorn.run("serve.app:create_app", factory=True, host=host, port=port, workers=workers, log_level="info")


def ask_command(
    question: Annotated[str, typer.Argument(help="The question, in quotes.")],
    videos: Annotated[list[Path], typer.Argument(help="Video files (MP4, MOV, MKV, WebM), numbered 1.. in order.")],
    option: Annotated[list[str] | None, typer.Option("--option", help="An answer option; repeat for each.")] = None,
    task: Annotated[str | None, typer.Option(help="Task kind (BU, NC, ..., CCQA); default NC or CCQA.")] = None,
    max_turns: Annotated[int | None, typer.Option(help=MAX_TURNS_HELP, min=1)] = None,
    policy: Annotated[str | None, typer.Option(help="Master policy (default: settings, i.e. embedded gguf).")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible URL for openai:MODEL.")] = None,
) -> None:
    """Answer QUESTION over the VIDEOs with the deployed agent, printing each step as it happens and the answer."""
    from serve.ask import ask

    code = ask(question, videos, option or [], task, max_turns, policy, base_url, console)
    raise typer.Exit(code)
