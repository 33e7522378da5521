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


def test_a_lora_master_over_a_local_gguf_file_is_refused_at_packing(warm_start, tmp_path):
    import shutil

    folder, _, _ = warm_start
    lora = tmp_path / "lora-warmstart"
    shutil.copytree(folder, lora)
    (lora / masters.ADAPTER_FOLDER).mkdir()
    (lora / "policy.json").write_text(json.dumps({"protocol": "json", "base": "gguf:/tmp/mine.gguf"}))
    with pytest.raises(ValueError, match="registry base"):  # a user's file is not fetched and verified by name
        masters.pack(lora, tmp_path / "out", command="")


def test_a_run_spec_names_the_trained_master_it_measured_so_a_resume_never_mixes_two(warm_start, tmp_path):
    from agentcvr.components import recorded

    folder, _, _ = warm_start
    packed = tmp_path / "looker-test"
    masters.pack(folder, packed, command="first")
    spec = recorded(policy_component(f"trained:{packed}"))
    assert spec.options["master_sha256"] == masters.master_digest(packed)
    masters.pack(folder, packed, command="retrained")  # other weights behind the same name: another manifest
    assert recorded(policy_component(f"trained:{packed}")).options["master_sha256"] != spec.options["master_sha256"]
    shipped = recorded(policy_component("trained")).options["master_sha256"]  # the default, by what it is now
    assert shipped == masters.master_digest(masters.DEFAULT_TRAINED)
    # the llama.cpp weights are recorded at their default too: runs of the lora form and the merged form never mix
    assert recorded(policy_component("trained")).options["weights"] == "merged"
    assert recorded(policy_component("trained", weights="lora")).options["weights"] == "lora"
    with pytest.raises(ValueError, match="weights"):
        policy_component("trained", weights="q4")
    with pytest.raises(ValueError, match="runs in torch"):  # a merged checkpoint folder has no adapter to merge
        make_policy(policy_component(f"trained:{folder}", weights="lora", reader="none"))


def test_every_shipped_master_matches_its_manifest():
    for name in masters.SHIPPED:
        folder = masters.master_folder(name)  # raises naming the file that differs
        assert json.loads((folder / masters.MANIFEST).read_text())["command"]
    assert masters.DEFAULT_TRAINED in masters.SHIPPED


def test_a_lora_checkpoint_packs_from_its_adapter_alone(warm_start, tmp_path):
    """GRPO on a GPU machine brings back the adapter, not the merged weights: packing needs only the adapter."""
    import shutil

    from train.config import ModelConfig
    from train.tiny_model import load_policy_model, with_lora

    folder, _, _ = warm_start
    lora = tmp_path / "lora-final"
    shutil.copytree(folder, lora)
    (lora / "model.safetensors").unlink()
    model = ModelConfig(kind="pretrained", name_or_path=str(folder), lora_rank=2)
    with_lora(load_policy_model(model, str(folder)), model).save_pretrained(lora / masters.ADAPTER_FOLDER)
    (lora / "policy.json").write_text(json.dumps({"protocol": "json", "base": "gguf:smollm2-135m"}))
    config = json.loads((lora / "config.json").read_text())  # the tiny Qwen2 under the Llama name the export takes
    (lora / "config.json").write_text(json.dumps(config | {"architectures": ["LlamaForCausalLM"]}))
    manifest = masters.pack(lora, tmp_path / "out", command="")
    assert masters.LORA_ADAPTER in manifest["files"] and "model.safetensors" not in manifest["files"]


def test_threads_of_a_torch_master_are_refused_not_ignored(warm_start, tmp_path):
    folder, _, _ = warm_start
    with pytest.raises(ValueError, match="runs in torch"):
        make_policy(policy_component(f"trained:{folder}", threads=2))
