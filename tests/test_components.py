"""The composition root builds training's parts too: the simulator a train-sim run looks through and its teacher."""

import typing

import pytest

from agentcvr.actions import Listen, Observe
from agentcvr.components import make_perception, make_policy, make_training_perception
from agentcvr.openai_stub import OpenAIStub
from agentcvr.policies.expert import ExpertPolicy
from agentcvr.policies.scan_teacher import ScanTeacher, ScanThen
from simulator.jigsaw_sim import MASKED_AUDIO, OrchestratedSimulator
from simulator.llm_sim import LLMSimulator
from simulator.noise import Noise
from simulator.script_sim import ScriptSimulator
from train.config import SFTConfig, TrainConfig

WHOLE_VIDEO_1 = Observe(video=1, start=0, end=30)


def config(**sections) -> TrainConfig:
    """The default config with some sections given, e.g. config(simulator={"max_events": 1}), validated as loaded."""
    return TrainConfig.model_validate(sections)


def test_the_rule_simulator_gets_its_configured_event_budget_and_no_noise(pet_script):
    table = {pet_script.id: pet_script}
    built = make_training_perception(config(simulator={"max_events": 1}), table)
    assert isinstance(built, ScriptSimulator) and built.noise is None
    episode = pet_script.episode
    assert built.observe(episode, WHOLE_VIDEO_1) == ScriptSimulator(table, max_events=1).observe(episode, WHOLE_VIDEO_1)
    assert built.observe(episode, WHOLE_VIDEO_1) != ScriptSimulator(table).observe(episode, WHOLE_VIDEO_1)


def test_any_noise_rate_adds_noise_seeded_by_the_run(pet_script):
    table = {pet_script.id: pet_script}
    cfg = config(simulator={"drop_probability": 1.0}, seed=7)
    built = make_training_perception(cfg, table)
    assert built.noise == Noise(seed=7, drop_probability=1.0)
    deaf = ScriptSimulator(table, noise=Noise(drop_probability=1.0))
    assert built.observe(pet_script.episode, WHOLE_VIDEO_1) == deaf.observe(pet_script.episode, WHOLE_VIDEO_1)


def test_the_jigsaw_method_orchestrates_the_simulator(pet_script):
    table = {pet_script.id: pet_script}
    built = make_training_perception(config(methods={"jigsaw": {"enabled": True}}), table)
    assert isinstance(built, OrchestratedSimulator) and isinstance(built.base, ScriptSimulator)
    episode = pet_script.episode
    plain = ScriptSimulator(table).observe(episode, WHOLE_VIDEO_1)
    assert built.observe(episode, WHOLE_VIDEO_1) == plain  # not a jigsaw episode: passes through
    visual_only = episode.model_copy(update={"reference": {"jigsaw": {"mode": "SMS", "dominant": "V"}}})
    assert built.listen(visual_only, Listen(video=1, start=0, end=30)) == MASKED_AUDIO
    assert not isinstance(make_training_perception(config(), table), OrchestratedSimulator)


def test_the_llm_simulator_asks_the_configured_server_and_model(pet_script):
    with OpenAIStub() as stub:
        stub.reply(content="A cat naps on a couch.")
        cfg = config(simulator={"kind": "llm", "url": stub.base_url, "model": "sim-model", "temperature": 0.3})
        built = make_training_perception(cfg, {pet_script.id: pet_script})
        assert isinstance(built, LLMSimulator)
        assert built.observe(pet_script.episode, WHOLE_VIDEO_1) == "A cat naps on a couch."
        (request,) = stub.requests
    assert (request["model"], request["temperature"]) == ("sim-model", 0.3)


def test_every_configurable_teacher_is_a_policy_name(pet_script):
    table = {pet_script.id: pet_script}
    teachers = typing.get_args(SFTConfig.model_fields["teacher"].annotation)
    assert set(teachers) == {"expert", "scan", "search"}
    assert isinstance(make_policy("expert", table), ExpertPolicy)
    assert isinstance(make_policy("scan", table), ScanTeacher)
    assert isinstance(make_policy("search", table), ScanThen)


def test_the_search_teacher_searches_on_its_share_of_episodes_and_the_same_ones_every_run():
    """A warm start imitating `search` at share 0.5 sees both plans: the scan alone, and the scan then the search's
    turn (NC: each video again in windows)."""
    from agentcvr.agent import Agent
    from agentcvr.interfaces import Limits
    from scripts_gen.generate import generate

    scripts = generate("NC", 12, seed=3)
    table = {s.id: s for s in scripts}

    def turns(share: float) -> list[int]:
        agent = Agent(make_policy("search", table, share=share), ScriptSimulator(table), Limits(max_turns=6))
        return [agent.run(s.episode).turns for s in scripts]

    scan = [
        Agent(make_policy("scan", table), ScriptSimulator(table), Limits(max_turns=6)).run(s.episode).turns
        for s in scripts
    ]
    always, half = turns(1.0), turns(0.5)
    assert all(a == t + 1 for a, t in zip(always, scan, strict=True))  # one more turn of looks on every episode
    assert set(half) == set(scan) | set(always) and 0 < sum(h > t for h, t in zip(half, scan, strict=True)) < 12
    assert half == turns(0.5) and turns(0.0) == scan
    cfg = config(sft={"teacher": "search", "teacher_search_share": 0.5})
    assert cfg.sft.teacher_search_share == 0.5


def test_unknown_perception_names_the_valid_ones():
    with pytest.raises(ValueError, match="choose one of sim, llm-sim, real"):
        make_perception("simulator")


def test_the_embedded_master_reads_with_the_shipped_reader_and_the_zero_shot_one_is_a_flag_away():
    from agentcvr.components import policy_component

    default = policy_component("gguf").options
    assert (default["reader"], default["reader_looks"]) == ("scan-v2", "search")
    assert policy_component("gguf", reader="none").options["reader"] == "none"
    assert "reader" not in policy_component("gguf-free").options  # the published zero-shot setting
    assert policy_component("random").options == {}
