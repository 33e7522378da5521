"""Service settings: environment variables with the prefix `AGENTCVR_` (e.g. `AGENTCVR_MEDIA_ROOT=/data`), or a YAML
or JSON file named by `AGENTCVR_SETTINGS_FILE` / `agentcvr serve --settings FILE` (environment wins over the file).
Read once per process (`get_settings()`) and handed to the app as a dependency.

Traces and uploads live in a per-user data folder by default (`default_data_dir()`: `$XDG_DATA_HOME/agentcvr/serve`,
else `~/.local/share/agentcvr/serve`), not in whatever folder the server was started from."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from agentcvr.components import DEFAULT_POLICY


def default_data_dir() -> Path:
    """The per-user folder of the trace store and uploads (XDG base directories)."""
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "agentcvr" / "serve"


class Settings(BaseSettings):
    """Everything `agentcvr serve` can be told; defaults run offline on the embedded CPU stack."""

    model_config = SettingsConfigDict(env_prefix="AGENTCVR_", extra="forbid")

    policy: str = Field(
        default=DEFAULT_POLICY,
        description="Master policy: gguf (embedded), gguf:FILE, trained (looker-v8), openai:MODEL, hf:DIR.",
    )
    policy_url: str | None = Field(default=None, description="OpenAI-compatible base URL for policy openai:MODEL.")
    policy_threads: int | None = Field(
        default=None, ge=1, description="CPU threads of the embedded master (default: every core, up to 8)."
    )
    policy_reader: str | None = Field(
        default=None,
        description="The master's option reader: scan-v2, scan-v1, a train-reader folder, or none (the model alone); "
        "unset: the policy's default (gguf: scan-v2).",
    )
    policy_prompt_batch: int | None = Field(
        default=None,
        ge=1,
        description="Prompt tokens the embedded master reads per step (default 32): a stopped run waits for one step.",
    )
    perception: str = Field(default="real", description="'real' (files) is the only choice that reads videos.")
    vlm_url: str | None = Field(default=None, description="OpenAI-compatible VLM base URL; unset: CPU describer.")
    vlm_model: str = Field(default="Qwen/Qwen2.5-VL-7B-Instruct", description="VLM model name at vlm_url.")
    whisper_size: str = Field(
        default="whisper-tiny.en", description="agentcvr.models name or faster-whisper size of the audio agent."
    )
    media_root: Path = Field(default=Path("media"), description="Videos named by path must lie under this folder.")
    upload_dir: Path = Field(
        default_factory=lambda: default_data_dir() / "uploads",
        description="Where uploaded videos are kept while their run lasts (default: the per-user data folder).",
    )
    trace_dir: Path = Field(
        default_factory=default_data_dir,
        description="Folder of the trace database, traces.sqlite (default: the per-user data folder).",
    )
    retention_hours: float = Field(
        default=7 * 24, ge=0, description="Traces (and leftover uploads) older than this are deleted; 0 keeps them."
    )
    cleanup_interval: float = Field(default=3600, gt=0, description="Seconds between two retention sweeps.")
    keep_uploads: bool = Field(default=False, description="Keep uploaded videos after their run (until retention).")
    max_upload_mb: float = Field(
        default=256, gt=0, description="Largest video file, MiB: an upload or a file under the media root."
    )
    max_request_mb: float = Field(default=1024, gt=0, description="Largest request body, MiB.")
    max_videos: int = Field(default=8, ge=1, le=64, description="Videos per request at most.")
    max_video_seconds: float = Field(default=3 * 3600, gt=0, description="Longest video accepted, seconds.")
    max_question_chars: int = Field(default=4000, ge=1, description="Longest question, characters.")
    max_options: int = Field(default=26, ge=1, description="Answer options at most.")
    max_turns: int = Field(default=20, ge=1, le=100, description="Default and largest per-request turn limit.")
    api_key: SecretStr | None = Field(
        default=None, description="If set, /answer and /traces need 'Bearer KEY' (or a signed viewer link)."
    )
    viewer_link_seconds: float = Field(
        default=3600, gt=0, description="How long the signed viewer link in an /answer reply stays valid."
    )
    max_concurrent: int = Field(default=2, ge=1, description="Agent runs at once.")
    max_queue: int = Field(default=8, ge=0, description="Runs waiting for a slot; more get 429.")
    queue_timeout: float = Field(default=30, gt=0, description="Seconds a queued run waits before 503.")
    request_timeout: float = Field(default=600, gt=0, description="Seconds one run may take before status timeout.")
    thumbnails: int = Field(default=8, ge=0, le=32, description="Frame thumbnails kept per observe step.")
    body_idle_timeout: float = Field(default=10, gt=0, description="Seconds a request body may pause before 408.")
    observation_cache: int = Field(default=1024, ge=0, description="Observations perception keeps in memory.")
    transcript_cache: int = Field(default=512, ge=0, description="Transcripts the audio agent keeps in memory.")
    frame_cache_mb: int = Field(default=512, ge=0, description="Decoded frames perception keeps in memory, MiB.")
    call_records: int = Field(default=1000, ge=1, description="Perception calls kept for stats (~300 bytes each).")

    def perception_options(self) -> dict[str, Any]:
        """Options for `RealPerception`: the CPU describer, or the VLM when `vlm_url` is set."""
        options: dict[str, Any] = {
            "audio": {"model": self.whisper_size, "cache_size": self.transcript_cache},
            "cache_size": self.observation_cache,
            "frame_cache_mb": self.frame_cache_mb,
            "call_records": self.call_records,
        }
        if self.vlm_url:
            options |= {"visual": "vlm", "vlm": {"base_url": self.vlm_url, "model": self.vlm_model}}
        return options


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from a YAML/JSON file (if any), under the environment, under explicit overrides."""
    values: dict[str, Any] = {}
    path = path or os.environ.get("AGENTCVR_SETTINGS_FILE")
    if path:
        text = Path(path).read_text()
        if str(path).endswith(".json"):
            values = json.loads(text)
        else:
            import yaml

            values = yaml.safe_load(text) or {}
        if not isinstance(values, dict):
            raise ValueError(f"settings file {path} must hold a mapping of setting names to values")
    environment = Settings().model_dump(exclude_unset=True)  # only what the environment set
    return Settings(**{**values, **environment, **overrides})


@lru_cache
def get_settings() -> Settings:
    return load_settings()
