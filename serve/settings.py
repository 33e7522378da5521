"""Service settings: environment variables with the prefix `AGENTCVR_` (e.g. `AGENTCVR_MEDIA_ROOT=/data`), or a YAML
or JSON file named by `AGENTCVR_SETTINGS_FILE` / `agentcvr serve --settings FILE` (environment wins over the file).
Read once per process (`get_settings()`) and handed to the app as a dependency."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything `agentcvr serve` can be told; defaults run offline on the embedded CPU stack."""

    model_config = SettingsConfigDict(env_prefix="AGENTCVR_", extra="forbid")

    policy: str = Field(default="gguf", description="Master policy: gguf (embedded), gguf:FILE, openai:MODEL, hf:DIR.")
    policy_url: str | None = Field(default=None, description="OpenAI-compatible base URL for policy openai:MODEL.")
    perception: str = Field(default="real", description="'real' (files) is the only choice that reads videos.")
    vlm_url: str | None = Field(default=None, description="OpenAI-compatible VLM base URL; unset: CPU describer.")
    vlm_model: str = Field(default="Qwen/Qwen2.5-VL-7B-Instruct", description="VLM model name at vlm_url.")
    whisper_size: str = Field(
        default="whisper-tiny.en", description="agentcvr.models name or faster-whisper size of the audio agent."
    )
    media_root: Path = Field(default=Path("media"), description="Videos named by path must lie under this folder.")
    upload_dir: Path = Field(default=Path("runs/serve/uploads"), description="Where uploaded videos are kept.")
    trace_dir: Path = Field(default=Path("runs/serve"), description="Folder of the trace database (traces.sqlite).")
    max_upload_mb: float = Field(default=256, gt=0, description="Largest uploaded file, MiB.")
    max_request_mb: float = Field(default=1024, gt=0, description="Largest request body, MiB.")
    max_videos: int = Field(default=8, ge=1, le=64, description="Videos per request at most.")
    max_video_seconds: float = Field(default=3 * 3600, gt=0, description="Longest video accepted, seconds.")
    max_question_chars: int = Field(default=4000, ge=1, description="Longest question, characters.")
    max_options: int = Field(default=26, ge=1, description="Answer options at most.")
    max_turns: int = Field(default=20, ge=1, le=100, description="Default and largest per-request turn limit.")
    api_key: SecretStr | None = Field(default=None, description="If set, /answer and /traces need 'Bearer KEY'.")
    max_concurrent: int = Field(default=2, ge=1, description="Agent runs at once.")
    max_queue: int = Field(default=8, ge=0, description="Runs waiting for a slot; more get 429.")
    queue_timeout: float = Field(default=30, gt=0, description="Seconds a queued run waits before 503.")
    request_timeout: float = Field(default=600, gt=0, description="Seconds one run may take before status timeout.")
    thumbnails: int = Field(default=8, ge=0, le=32, description="Frame thumbnails kept per observe step.")

    def perception_options(self) -> dict[str, Any]:
        """Options for `RealPerception`: the CPU describer, or the VLM when `vlm_url` is set."""
        options: dict[str, Any] = {"audio": {"model": self.whisper_size}}
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
