"""Settings: a file under the environment under explicit overrides; unknown names refused."""

from __future__ import annotations

import pydantic
import pytest

from serve.settings import load_settings


def test_file_environment_and_overrides(tmp_path, monkeypatch):
    path = tmp_path / "serve.yaml"
    path.write_text("max_turns: 7\nmax_videos: 3\npolicy: openai:x\n")
    monkeypatch.setenv("AGENTCVR_MAX_VIDEOS", "5")
    settings = load_settings(path, policy="gguf")
    assert (settings.max_turns, settings.max_videos, settings.policy) == (7, 5, "gguf")
    assert settings.perception_options() == {
        "audio": {"model": "whisper-tiny.en", "cache_size": 512},
        "cache_size": 1024,
        "frame_cache_mb": 512,
        "call_records": 1000,
    }
    assert load_settings(vlm_url="http://gpu/v1").perception_options()["visual"] == "vlm"


def test_unknown_or_bad_settings_are_refused(tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text("max_turnz: 7\n")
    with pytest.raises(pydantic.ValidationError, match="max_turnz"):
        load_settings(path)
    with pytest.raises(pydantic.ValidationError, match="max_concurrent"):
        load_settings(max_concurrent=0)
    with pytest.raises(pydantic.ValidationError, match="policy_prompt_batch"):
        load_settings(policy_prompt_batch=0)


def test_traces_default_to_the_per_user_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    settings = load_settings()
    assert settings.trace_dir == tmp_path / "data" / "agentcvr" / "serve"
    assert settings.upload_dir == settings.trace_dir / "uploads"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert load_settings().trace_dir == tmp_path / ".local" / "share" / "agentcvr" / "serve"
