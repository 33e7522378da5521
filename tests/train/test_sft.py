"""Warm-start encoding: pieces tokenized apart concatenate to what TRL builds, and only assistant tokens train."""

from __future__ import annotations

from agentcvr.actions import tool_schemas
from agentcvr.interfaces import Limits
from agentcvr.policies.expert import ExpertPolicy
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator
from train.sft import encode, split_assistant_spans
from train.tokenizer import boilerplate, render_with_template, train_tokenizer
from train.trajectories import teacher_conversations


def test_encoding_matches_the_rollout_layout(pet_script):
    limits = Limits(max_turns=4, max_observation_chars=300)
    table = {pet_script.id: pet_script}
    conversations, results = teacher_conversations([pet_script], ExpertPolicy(table), ScriptSimulator(table), limits)
    assert results[0].answer == "B" and len(conversations) == 1
    text = render_with_template(conversations, tool_schemas())[0]
    tokenizer = train_tokenizer([text] * 4, vocab_size=600, fixed=boilerplate(tool_schemas()))
    ids, mask = encode(tokenizer, text)
    assert tokenizer.decode(ids) == text  # lossless
    # The prompt part is exactly what TRL's rollout starts from: the chat template with the generation prompt.
    prompt = tokenizer.apply_chat_template(
        conversations[0][:2], tools=tool_schemas(), add_generation_prompt=True, return_dict=True
    )["input_ids"]
    assert ids[: len(prompt)] == list(prompt) and not any(mask[: len(prompt)])
    trained = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    assert trained.count("<tool_call>") == len([s for s in results[0].steps if s.kind in ("tool", "answer")])
    assert "<tool_response>" not in trained  # tool output never carries loss
    assert all(piece.endswith("<|im_end|>") for piece, flag in split_assistant_spans(text) if flag)
    # The fixed system block is two tokens (split around the turn limit), a tool call's JSON scaffolding one each.
    fixed = boilerplate(tool_schemas())
    assert all(len(tokenizer.encode(piece, add_special_tokens=False)) == 1 for piece in fixed)
    assert len(prompt) < 200


def test_json_protocol_encoding_trains_the_json_turns_and_weighs_the_answer():
    script = generate_one("PI", 0, 10000)
    table = {script.id: script}
    teacher = ExpertPolicy(table, protocol="json")
    limits = Limits(max_turns=6, max_observation_chars=300)
    conversations, results = teacher_conversations([script], teacher, ScriptSimulator(table), limits)
    text = render_with_template(conversations, None)[0]
    assert "<tools>" not in text  # the JSON protocol's system prompt describes the actions itself
    fixed = boilerplate(None, "json")
    tokenizer = train_tokenizer([text] * 4, vocab_size=600, fixed=fixed)
    assert all(len(tokenizer.encode(piece, add_special_tokens=False)) == 1 for piece in fixed)
    ids, mask = encode(tokenizer, text, answer_weight=10.0)
    assert tokenizer.decode(ids) == text
    by_weight = {w: tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == w]) for w in set(mask)}
    looks = sum(s.kind == "tool" for s in results[0].steps)
    assert looks > 0 and by_weight[1.0].count("<|im_end|>") <= looks  # the looking turns train at weight 1
    assert '"action": "observe"' in by_weight[1.0] or '"action": "get_caption"' in by_weight[1.0]
    assert by_weight[10.0].count('"action": "answer"') == 1  # the answer turn at answer_weight
    assert "Result of" in by_weight[0.0] and "Result of" not in by_weight[1.0] + by_weight[10.0]


def test_an_interrupted_warm_start_resumes_after_its_last_epoch_as_if_never_stopped(tmp_path):
    import pytest
    import torch

    from train.config import SFTConfig
    from train.sft import train_sft

    texts, tokenizer, fresh = _tiny_warm_start(copies=4)
    cfg = SFTConfig(max_epochs=3, batch_size=4, warmup_steps=2, patience=5, val_fraction=0.25)

    whole = train_sft(fresh(), tokenizer, texts, cfg, log=lambda _: None)

    def stop_in_epoch_2(message: str) -> None:
        if message.startswith("sft epoch 2"):
            raise KeyboardInterrupt

    checkpoint = tmp_path / "sft_checkpoint.pt"
    with pytest.raises(KeyboardInterrupt):
        train_sft(fresh(), tokenizer, texts, cfg, log=stop_in_epoch_2, checkpoint=checkpoint)
    messages: list[str] = []
    resumed_model = fresh()
    resumed = train_sft(resumed_model, tokenizer, texts, cfg, log=messages.append, checkpoint=checkpoint)
    assert messages[0].startswith("sft: resuming after epoch 1")
    assert [m for m in messages if m.startswith("sft epoch")][0].startswith("sft epoch 2")
    assert resumed.epochs == whole.epochs == 3 and resumed.steps == whole.steps
    losses = [loss for _, loss in resumed.val_loss]  # the same epochs, the same batches, the same losses
    assert [step for step, _ in resumed.val_loss] == [step for step, _ in whole.val_loss]
    assert losses == pytest.approx([loss for _, loss in whole.val_loss])
    assert resumed.stopped == whole.stopped == "max_epochs 3"
    again = fresh()
    train_sft(again, tokenizer, texts, cfg, log=lambda _: None, checkpoint=checkpoint)  # finished: nothing to train
    for a, b in zip(again.state_dict().values(), resumed_model.state_dict().values(), strict=True):
        assert torch.equal(a, b)  # the best weights restored from the checkpoint


def test_the_warm_start_says_what_it_leaves_out_and_every_tenth_step_and_refuses_when_nothing_fits():
    import pytest

    from train.config import SFTConfig, TrainConfig
    from train.sft import train_sft
    from train.tiny_model import build_tiny_model

    scripts = [generate_one(task, 0, 0) for task in ("PI", "FSA")]  # PI's four looks are longer than FSA's two
    table = {s.id: s for s in scripts}
    conversations, _ = teacher_conversations(scripts, ExpertPolicy(table), ScriptSimulator(table), Limits(max_turns=4))
    texts = render_with_template(conversations, tool_schemas()) * 2
    tokenizer = train_tokenizer(texts, vocab_size=600, fixed=boilerplate(tool_schemas()))
    lengths = sorted(len(tokenizer(text)["input_ids"]) for text in texts)
    small = TrainConfig().model.model_copy(update={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1})
    cfg = SFTConfig(max_epochs=1, batch_size=2, warmup_steps=1, val_fraction=0.5, max_length=lengths[1])
    said: list[str] = []
    kinds = [s.task for s in scripts] * 2
    result = train_sft(build_tiny_model(small, tokenizer, seed=0), tokenizer, texts, cfg, log=said.append, kinds=kinds)
    assert result.too_long == 2 and result.examples == 1  # two kept: one validates, one trains
    assert any(f"left out 2 of 4 trajectories over sft.max_length={lengths[1]}" in line for line in said)
    assert any("; PI 2 of 2)" in line for line in said)  # the kind that lost them, of all it had
    # every tenth step of an epoch is said (a pretrained base's epoch is long): 16 trajectories, 4 validate, 12 steps
    said.clear()
    one_by_one = SFTConfig(max_epochs=1, batch_size=1, warmup_steps=1, val_fraction=0.25)
    train_sft(build_tiny_model(small, tokenizer, seed=0), tokenizer, texts * 4, one_by_one, log=said.append)
    assert [line.split(":")[0] for line in said if line.startswith("sft step")] == ["sft step 10/12 (epoch 1)"]
    with pytest.raises(ValueError, match="every trajectory passes sft.max_length"):
        train_sft(
            build_tiny_model(small, tokenizer, seed=0), tokenizer, texts, cfg.model_copy(update={"max_length": 8})
        )


def test_a_lora_warm_start_trains_only_the_adapter_and_merges_into_the_same_function():
    import pytest
    import torch

    from train.config import SFTConfig, TrainConfig
    from train.sft import train_sft
    from train.tiny_model import build_tiny_model, trainable_count, with_lora

    scripts = [generate_one("PI", i, 0) for i in range(2)]
    table = {s.id: s for s in scripts}
    conversations, _ = teacher_conversations(scripts, ExpertPolicy(table), ScriptSimulator(table), Limits(max_turns=4))
    texts = render_with_template(conversations, tool_schemas()) * 4
    tokenizer = train_tokenizer(texts, vocab_size=600, fixed=boilerplate(tool_schemas()))
    small = TrainConfig().model.model_copy(
        update={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "lora_rank": 4,
            "lora_top_layers": 1,
        }
    )
    with pytest.raises(ValueError, match="model.kind=pretrained"):
        with_lora(build_tiny_model(small, tokenizer, seed=0), small)
    model = with_lora(build_tiny_model(small, tokenizer, seed=0), small.model_copy(update={"kind": "pretrained"}))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    assert 0 < trainable_count(model) < sum(p.numel() for p in before.values()) / 4
    cfg = SFTConfig(max_epochs=2, batch_size=2, warmup_steps=1, val_fraction=0.25, learning_rate=0.01)
    result = train_sft(model, tokenizer, texts, cfg, log=lambda _: None)
    assert result.steps > 0 and torch.isfinite(torch.tensor(result.best_val))
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert changed and all("lora_" in name for name in changed)  # the base stays frozen
    ids = torch.tensor([tokenizer(texts[0])["input_ids"][:64]])
    with torch.no_grad():
        adapted = model(input_ids=ids).logits
        merged = model.merge_and_unload()
        assert not any("lora" in name for name, _ in merged.named_parameters())
        assert torch.allclose(merged(input_ids=ids).logits, adapted, atol=1e-4)


def test_a_warm_start_interrupted_within_an_epoch_goes_on_from_the_next_batch_as_if_never_stopped(tmp_path):
    """One epoch of looker-v5's warm start is 80 minutes on 2 cores: a checkpoint within the epoch keeps an
    interruption from losing it all, and the resumed run draws the same batch order and ends on the same weights."""
    import pytest
    import torch

    from train.config import SFTConfig
    from train.sft import train_sft

    texts, tokenizer, fresh = _tiny_warm_start(copies=12)  # 27 training batches an epoch
    cfg = SFTConfig(max_epochs=2, batch_size=1, warmup_steps=2, patience=5, val_fraction=0.25, checkpoint_minutes=0)

    whole_model, unsaved = fresh(), cfg.model_copy(update={"checkpoint_minutes": None})
    whole = train_sft(whole_model, tokenizer, texts, unsaved, log=lambda _: None)

    def stop_at_step_20(message: str) -> None:
        if message.startswith("sft step 20/"):
            raise KeyboardInterrupt

    checkpoint = tmp_path / "sft_checkpoint.pt"
    with pytest.raises(KeyboardInterrupt):
        train_sft(fresh(), tokenizer, texts, cfg, log=stop_at_step_20, checkpoint=checkpoint)
    messages: list[str] = []
    resumed_model = fresh()
    resumed = train_sft(resumed_model, tokenizer, texts, cfg, log=messages.append, checkpoint=checkpoint)
    assert messages[0].startswith("sft: resuming after epoch 0, 19 batches into epoch 1 (19 steps")
    assert resumed.steps == whole.steps == 54 and resumed.epochs == whole.epochs == 2
    assert [step for step, _ in resumed.val_loss] == [step for step, _ in whole.val_loss]
    assert [loss for _, loss in resumed.val_loss] == pytest.approx([loss for _, loss in whole.val_loss])
    for a, b in zip(whole_model.state_dict().values(), resumed_model.state_dict().values(), strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def _tiny_warm_start(copies: int):
    """Expert trajectories of three PI scripts, `copies` times over, their tokenizer, and a maker of the same
    one-layer model: a warm start small enough to train twice in a test."""
    from train.config import TrainConfig
    from train.tiny_model import build_tiny_model

    scripts = [generate_one("PI", i, 0) for i in range(3)]
    table = {s.id: s for s in scripts}
    limits = Limits(max_turns=4, max_observation_chars=200)
    conversations, _ = teacher_conversations(scripts, ExpertPolicy(table), ScriptSimulator(table), limits)
    texts = render_with_template(conversations, tool_schemas()) * copies
    tokenizer = train_tokenizer(texts, vocab_size=600, fixed=boilerplate(tool_schemas()))
    small = TrainConfig().model.model_copy(
        update={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "max_position_embeddings": 1024}
    )

    def fresh():
        return build_tiny_model(small, tokenizer, seed=0)

    return texts, tokenizer, fresh
