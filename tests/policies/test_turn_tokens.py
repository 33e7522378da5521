"""A trained master's turn budget is the one it was trained with: a shorter one cuts its longest turns (the search's
eight MOC windows run past 256 tokens) into unparseable calls."""

from __future__ import annotations

import json

import yaml

from agentcvr.policies.hf_policy import DEFAULT_TURN_TOKENS, POLICY_FILE, checkpoint_turn_tokens


def test_the_budget_is_read_from_policy_json_first(tmp_path):
    (tmp_path / POLICY_FILE).write_text(json.dumps({"protocol": "json", "max_turn_tokens": 512}))
    (tmp_path / "train_config.yaml").write_text(yaml.safe_dump({"agent": {"max_turn_tokens": 96}}))
    assert checkpoint_turn_tokens(tmp_path) == 512


def test_an_older_run_folder_falls_back_to_its_training_config(tmp_path):
    (tmp_path / POLICY_FILE).write_text(json.dumps({"protocol": "json"}))  # written before the budget was recorded
    (tmp_path / "train_config.yaml").write_text(yaml.safe_dump({"agent": {"protocol": "json", "max_turn_tokens": 512}}))
    assert checkpoint_turn_tokens(tmp_path) == 512


def test_a_folder_that_records_nothing_keeps_the_old_default(tmp_path):
    assert checkpoint_turn_tokens(tmp_path) == DEFAULT_TURN_TOKENS == 256
