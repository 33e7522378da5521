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
    assert settings.perception_options() == {"audio": {"model": "whisper-tiny.en"}}
    assert load_settings(vlm_url="http://gpu/v1").perception_options()["visual"] == "vlm"


def test_unknown_or_bad_settings_are_refused(tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text("max_turnz: 7\n")
    with pytest.raises(pydantic.ValidationError, match="max_turnz"):
        load_settings(path)
    with pytest.raises(pydantic.ValidationError, match="max_concurrent"):
        load_settings(max_concurrent=0)
