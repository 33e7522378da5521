"""The run spec: one hash for one set of settings, whatever way they were given, and what differs named."""

import pytest

from agentcvr.components import perception_component, policy_component, recorded
from agentcvr.interfaces import Limits
from agentcvr.spec import Component, RunSpec, SpecMismatch, check_resume


def spec(policy: str = "random", limits: Limits | None = None, **options) -> RunSpec:
    return RunSpec(
        policy=recorded(policy_component(policy, **options)),
        perception=recorded(perception_component("sim")),
        limits=limits or Limits(),
    )


def test_an_explicit_default_and_no_option_are_one_spec():
    assert spec(seed=0).digest == spec().digest == spec(seed=None).digest
    assert spec(seed=1).digest != spec().digest
    assert len(spec().digest) == 16 and spec().canonical() == spec().canonical()


def test_operational_options_and_secrets_are_not_recorded():
    fast = perception_component("real", visual_workers=4, frame_cache_dir="/tmp/frames", observe_timeout=5.0)
    slow = perception_component("real")
    assert recorded(fast) == recorded(slow)
    with_vlm = perception_component("real", visual="vlm", vlm={"base_url": "http://a/v1", "model": "m", "api_key": "k"})
    assert recorded(with_vlm).options == {"visual": "vlm", "vlm": {"model": "m"}}  # the model, not where it runs
    # the master's threads and prompt batch change how fast it reads, and how soon it stops, not the run's identity
    assert recorded(policy_component("gguf", threads=1, prompt_batch=16)) == recorded(policy_component("gguf"))


@pytest.mark.parametrize(
    ("policy", "options", "options_recorded"),
    [
        ("gguf", {}, {"reader": "scan-v2", "reader_looks": "search", "scan_frames": 128}),  # its defaults, recorded
        ("gguf", {"reader": "none"}, {"reader": "none"}),  # no reader: who looks for it means nothing
        ("gguf", {"reader_looks": "master"}, {"reader": "scan-v2", "reader_looks": "master", "scan_frames": 128}),
        ("gguf-free", {}, {}),  # no reader by default: nothing to record
        ("gguf-free", {"reader": "scan-v1"}, {"reader": "scan-v1", "reader_looks": "master", "scan_frames": 16}),
        ("expert", {"reader": None}, {}),  # None is not given
        ("random", {"seed": 0}, {}),  # an unmarked option at its default is left out
        ("trained", {"reader": "none"}, {"reader": "none", "weights": "merged"}),  # a kind's own mark
    ],
)
def test_options_marked_recorded_are_recorded_at_their_defaults(policy, options, options_recorded):
    assert policy_component(policy, **options).options == options_recorded


def test_the_recorded_rule_is_declared_beside_the_option_and_holds_where_a_kind_changes_its_default():
    from pydantic import Field

    from agentcvr.components import POLICIES, PolicyOptions, Recorded, _marks

    expected = {
        "reader": Recorded(),
        "reader_looks": Recorded(while_on="reader"),
        "scan_frames": Recorded(while_on="reader"),
    }
    assert {key: m for key, f in PolicyOptions.model_fields.items() for m in f.metadata} == expected
    own = {"trained": {"weights": Recorded()}}  # a kind's own marked options add to the shared ones
    assert all(_marks(kind.model()) == expected | own.get(name, {}) for name, kind in POLICIES.items())

    class ReadsByDefault(PolicyOptions):  # a new policy kind, its reader on by default, declared without a mark
        reader: str | None = Field(default="scan-v1")

    assert _marks(ReadsByDefault) == expected


def test_differences_name_dotted_fields():
    mine = spec("random", Limits(max_turns=3), seed=2)
    theirs = spec("random")
    assert mine.differences(theirs) == ["limits.max_turns: 3 != 20", "policy.options.seed: 2 != (unset)"]


def test_check_resume_refuses_another_spec_and_records_without_one(tmp_path):
    path = tmp_path / "out.jsonl"
    check_resume(path, spec(), [spec(), spec(seed=0)])  # the same spec: fine
    with pytest.raises(SpecMismatch, match='policy.name: "expert" != "random"'):
        check_resume(path, spec("expert"), [spec()])
    with pytest.raises(SpecMismatch, match="2 record"):
        check_resume(path, spec(), [None, None])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: policy_component("random", sed=1),
            "policy 'random' takes no option sed (its options: reader, reader_looks, scan_frames, seed)",
        ),
        (lambda: policy_component("gguf", base_url="http://x"), "policy 'gguf' takes no option base_url"),
        (lambda: perception_component("sim", max_event=2), "perception 'sim' takes no option max_event"),
        (lambda: perception_component("real", visul="vlm"), "perception 'real' takes no option visul"),
        (lambda: policy_component("random", seed="many"), "policy 'random': bad option seed"),
        (lambda: policy_component("gguf", prompt_batch=0), "policy 'gguf': bad option prompt_batch"),
        (lambda: policy_component("random", prompt_batch=16), "policy 'random' takes no option prompt_batch"),
        (lambda: policy_component("robot"), "unknown policy 'robot'"),
        # nested options (VLMConfig, DescriberConfig, NoiseOptions) are checked as strictly as top-level ones
        (
            lambda: perception_component("real", visual="vlm", vlm={"base_url": "http://a/v1", "modle": "m"}),
            "perception 'real' takes no option vlm.modle (options of vlm: base_url, model, api_key,",
        ),
        (
            lambda: perception_component("real", describer={"ocrr": False}),
            "perception 'real' takes no option describer.ocrr (options of describer: ocr, ocr_language,",
        ),
        (
            lambda: perception_component("sim", noise={"sed": 1}),
            "perception 'sim' takes no option noise.sed (options of noise: seed, jitter_seconds,",
        ),
        (
            lambda: perception_component("real", audio={"modl": "tiny"}, visul="vlm"),
            "perception 'real' takes no option audio.modl, visul (options of audio: model,",
        ),
        (lambda: perception_component("real", describer={"ocr": "maybe"}), "bad option describer.ocr"),
    ],
)
def test_unknown_or_bad_options_are_refused_by_name(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_a_component_spec_is_frozen():
    with pytest.raises(ValueError):
        Component(name="sim", extra=1)


def test_nested_options_that_exist_are_recorded():
    part = perception_component("real", describer={"ocr": False}, vlm=None)
    assert part.options == {"describer": {"ocr": False}}
