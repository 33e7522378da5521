"""Shipped masters: a train-sim checkpoint packed with a sha256 manifest, refused when damaged, and run as
`--policy trained:NAME` in the agent loop."""

from __future__ import annotations

import json

import pytest

from agentcvr import masters
from agentcvr.agent import Agent
from agentcvr.components import make_policy, policy_component
from agentcvr.policies.read_answers import ReaderAnswers
from simulator.script_sim import ScriptSimulator


def test_a_packed_master_runs_by_name_and_a_damaged_one_is_refused_naming_the_file(warm_start, tmp_path, monkeypatch):
    folder, scripts, limits = warm_start
    packed = tmp_path / "looker-test"
    manifest = masters.pack(folder, packed, command="agentcvr train-sim --preset cpu-learn")
    assert {"config.json", "model.safetensors", "tokenizer.json", "policy.json", "tools.json"} <= set(manifest["files"])
    assert json.loads((packed / masters.MANIFEST).read_text()) == manifest
    monkeypatch.setitem(masters.SHIPPED, "looker-test", packed)

    policy = make_policy(policy_component("trained:looker-test", reader="none"))
    table = {s.id: s for s in scripts}
    result = Agent(policy, ScriptSimulator(table), limits).run(scripts[0].episode)
    assert result.answer is not None and result.steps[0].kind == "tool"  # it looks, then answers, as trained
    assert isinstance(make_policy(policy_component("trained:looker-test")), ReaderAnswers)  # the reader by default

    (packed / "tools.json").write_text("[]")
    with pytest.raises(ValueError, match="tools.json is damaged"):
        make_policy(policy_component("trained:looker-test", reader="none"))
    (packed / "tools.json").unlink()
    with pytest.raises(FileNotFoundError, match="missing tools.json"):
        masters.master_folder("looker-test")
    with pytest.raises(FileNotFoundError, match="not a train-sim checkpoint"):
        masters.pack(tmp_path / "nothing", tmp_path / "out", command="")
