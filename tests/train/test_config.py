"""Presets merge with key=value overrides; typos fail loudly."""

from __future__ import annotations

import pytest

from train.config import PRESETS, load_config


def test_every_preset_loads():
    for path in PRESETS.glob("*.yaml"):
        assert load_config(str(path)).name == path.stem


def test_overrides_are_yaml_values():
    cfg = load_config("cpu-tiny", ["grpo.max_steps=3", "data.tasks=[PI,NC]", "grpo.learning_rate=1e-5"])
    assert cfg.grpo.max_steps == 3 and cfg.data.tasks == ["PI", "NC"] and cfg.grpo.learning_rate == 1e-5


def test_unknown_key_and_preset_fail_with_the_valid_ones():
    with pytest.raises(ValueError, match="max_stepz"):
        load_config("cpu-tiny", ["grpo.max_stepz=3"])
    with pytest.raises(ValueError, match="cpu-tiny"):
        load_config("no-such-preset")
