"""Guided exploration (`grpo.forced_search_share`): where the scan's and the search's plans part in tokens, and a GRPO
batch whose forced rollouts start that turn with the search's tokens, kept in the loss, the policy writing the rest."""

from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError

from agentcvr.agent import Agent
from agentcvr.components import make_training_perception
from agentcvr.interfaces import Limits
from agentcvr.policies.search import scan_then_search, search_calls
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator
from tests.train.conftest import trainer_over
from tests.train.test_rollout import GenerateRecorder, runs
from train.config import TrainConfig
from train.forced_plan import TeacherConversations, search_starts, stop_anchors, stop_point
from train.rollout import forced_rows
from train.tokenizer import load_tokenizer

LIMITS = Limits(max_turns=4, max_observation_chars=2000)  # the gpu-looker preset's


def test_the_search_is_forced_on_the_turn_where_the_scan_answers(json_warm_start):
    folder, _, _ = json_warm_start
    tokenizer = load_tokenizer(str(folder))
    scripts = [generate_one("MSR", i, 5) for i in range(2)] + [generate_one("MOC", 0, 5), generate_one("BU", 0, 5)]
    simulator = ScriptSimulator({s.id: s for s in scripts}, sampling="frames")

    starts = search_starts(TeacherConversations(scripts, simulator, LIMITS, "json", 128), tokenizer, None)

    assert sorted(starts) == ["MOC-000000", "MSR-000000", "MSR-000001"]  # BU's search makes no call: no parting
    for turn, ids in starts.values():
        assert turn == 1  # the scan's looks are turn 0; the scan teacher answers in turn 1, the search observes
        assert tokenizer.decode(ids) == '{"action": "observe"'


def test_the_stop_after_the_search_parts_answering_from_looking_again(json_warm_start):
    folder, _, _ = json_warm_start
    tokenizer = load_tokenizer(str(folder))
    script = generate_one("MOC", 0, 5)
    table = {script.id: script}
    search = Agent(scan_then_search(table, "json", 1, 128), ScriptSimulator(table, sampling="frames"), LIMITS)
    conversation = search.converse(script.episode)[1]

    shared, answer, look = stop_point(tokenizer, None, conversation)

    context = tokenizer.decode(shared)
    windows = len(search_calls(script.episode, []))  # MOC's: every video in fixed-width windows
    assert context.count("Result of observe") == 2 + windows  # after the scan's two looks and the search's windows...
    assert context.rstrip().endswith("assistant")  # ...at the answer turn (this tokenizer writes the action's start
    assert "answer" in tokenizer.decode([answer])  # and name as one token; SmolLM2's parts them at the name)
    assert "observe" in tokenizer.decode([look])
    assert stop_point(tokenizer, None, conversation[:3]) is None  # one assistant turn: no look to make again


def test_the_first_share_of_each_episodes_copies_are_forced():
    start = (1, [7, 8])
    rows = forced_rows(["a"] * 4 + ["b"] * 4 + ["c"] * 2, {"a": start, "b": start}, 0.5)
    assert rows == [start, start, None, None, start, start, None, None, None, None]  # c never parts
    assert forced_rows(["a"] * 4, {"a": start}, 0.0) == [None] * 4


def test_the_share_needs_a_search_warm_start():
    with pytest.raises(ValidationError, match="needs sft.teacher=search"):
        TrainConfig.model_validate({"grpo": {"forced_search_share": 0.5}})


def forced_batch(json_warm_start, tmp_path, **grpo):
    """The real trainer with half of each group forced to observe in its second turn (the memorized PI episodes'),
    these `grpo` settings on top, and the first prompt's group as its batch rows: (trainer, inputs, rows, forced
    ids, tokenizer)."""
    folder, scripts, _ = json_warm_start
    tokenizer = load_tokenizer(str(folder))
    forced_ids = tokenizer('{"action": "observe"', add_special_tokens=False)["input_ids"]
    settings = {
        "num_generations": 4,
        "prompts_per_step": 1,
        "max_steps": 1,
        "max_completion_length": 512,
        "temperature": 0.7,
        "learning_rate": 1e-2,
        "save_steps": 100,
        "forced_search_share": 0.5,
    }
    trainer, rows, _, cfg = trainer_over(
        json_warm_start,
        tmp_path,
        agent={"protocol": "json", "max_turn_tokens": 48},
        grpo=settings | grpo,
        sft={"teacher": "search"},
        starts={s.id: (1, forced_ids) for s in scripts},
    )
    inputs = [dict(row) for row in rows[:1] for _ in range(cfg.grpo.num_generations)]
    trainer.batch_rows = inputs
    return trainer, inputs, rows, forced_ids, tokenizer


def test_forced_rollouts_start_their_turn_with_the_search_and_learn_from_it(json_warm_start, tmp_path, monkeypatch):
    trainer, inputs, rows, forced_ids, _ = forced_batch(json_warm_start, tmp_path)
    recorder = GenerateRecorder(monkeypatch)
    torch.manual_seed(1)
    out = trainer.rollout_func([row["prompt"] for row in inputs], trainer)

    assert out["forced"] == [True, True, False, False]  # half of the group, the first copies
    for i in range(2):
        prompt, completion, mask = out["prompt_ids"][i], out["completion_ids"][i], out["env_mask"][i]
        start, end = runs(mask)[1]  # the second policy turn
        assert completion[start : start + len(forced_ids)] == forced_ids  # it starts with the search's tokens ...
        assert out["logprobs"][i][start : start + len(forced_ids)] == [0.0] * len(forced_ids)  # drawn with p=1
        given = prompt + completion[: start + len(forced_ids)]
        assert any(g == given for g, _ in recorder.rows)  # ... which the model read before writing the rest
        assert out["sampled_text"][i].split("\n")[1].startswith('{"action": "observe"')
    fed = [given for given, _ in recorder.rows if given[-len(forced_ids) :] == forced_ids]
    assert len(fed) == 2  # the free rollouts were never fed the forced tokens

    trainer.train()  # one real update over a batch with forced rollouts: their reward logged beside the free ones'
    logs = [row for row in trainer.state.log_history if "loss" in row]
    assert len(logs) == 1 and math.isfinite(logs[0]["loss"])
    assert "plan/forced_reward" in logs[0] and "plan/free_reward" in logs[0]
    kind = rows[0]["task"]
    assert f"plan/{kind}/forced_reward" in logs[0] and f"plan/{kind}/free_reward" in logs[0]


@pytest.mark.parametrize("tokens", ["plan", "decisions"])
def test_choice_training_keeps_the_choice_tokens_alone_in_the_loss(json_warm_start, tmp_path, tokens):
    trainer, inputs, _, forced_ids, tokenizer = forced_batch(json_warm_start, tmp_path, trained_tokens=tokens)
    torch.manual_seed(1)
    out = trainer.rollout_func([row["prompt"] for row in inputs], trainer)

    for i in range(4):
        completion, mask = out["completion_ids"][i], out["env_mask"][i]
        assert len(mask) == len(completion) == len(out["logprobs"][i])
        assert completion[-1] == tokenizer.eos_token_id and mask[-1] == 0  # closed, so TRL sees no truncation
        kept = [at for at, m in enumerate(mask) if m]
        for at in kept:  # each trained token closes a turn's opening in the teachers' form (`{"action": "`) ...
            assert completion[at - len(forced_ids) + 1 : at] == forced_ids[:-1]
        if kept:
            assert kept[-1] == len(completion) - 2  # ... and the completion is cut right after the last
        if tokens == "plan":
            assert len(kept) == int(out["planned"][i])
        else:  # every turn that opened so: a forced rollout's first (its looks) and second (the forced one) at least
            assert len(kept) >= 1 + int(out["forced"][i])
    assert out["planned"][:2] == [True, True]  # the forced rollouts' last forced token
    at = [i for i, m in enumerate(out["env_mask"][0]) if m][1 if tokens == "decisions" else 0]  # the second turn's
    assert out["completion_ids"][0][at] == forced_ids[-1] and out["logprobs"][0][at] == 0.0

    trainer.train()  # a real update on the plan tokens alone
    logs = [row for row in trainer.state.log_history if "loss" in row]
    assert len(logs) == 1 and math.isfinite(logs[0]["loss"]) and logs[0]["plan/reached"] >= 0.5


def test_choice_training_needs_the_forced_search():
    for tokens in ("plan", "decisions"):
        with pytest.raises(ValidationError, match=f"trained_tokens={tokens} needs"):
            TrainConfig.model_validate({"sft": {"teacher": "search"}, "grpo": {"trained_tokens": tokens}})


def test_plan_rewards_are_read_per_kind():
    from train.grpo import plan_rewards

    rows = [
        {"task": "MOC", "forced": True},
        {"task": "MOC", "forced": False},
        {"task": "MSR", "forced": True},
        {"task": "MSR", "forced": False},
        {"task": "MSR", "forced": False},
    ]
    means = plan_rewards([1.0, 0.0, 0.0, 0.5, 1.0], rows)
    assert means == {
        "plan/forced_reward": 0.5,
        "plan/MOC/forced_reward": 1.0,
        "plan/MSR/forced_reward": 0.0,
        "plan/free_reward": 0.5,
        "plan/MOC/free_reward": 0.0,
        "plan/MSR/free_reward": 0.75,
    }


def test_a_run_finds_its_prompts_starts_and_anchors_from_one_conversation_each_and_logs_them(json_warm_start, tmp_path):
    from train.pipeline import Run

    folder, _, _ = json_warm_start
    cfg = TrainConfig.model_validate(
        {
            "agent": {"protocol": "json"},
            "sft": {"teacher": "search"},
            "grpo": {"forced_search_share": 0.25, "stop_anchor": 1.0},
        }
    )
    scripts = [generate_one("MSR", 0, 5), generate_one("BU", 0, 5)]
    run = Run(cfg, tmp_path)
    conversations = run.teacher_conversations(scripts, ScriptSimulator({s.id: s for s in scripts}, sampling="frames"))
    starts = run.search_starts(conversations, load_tokenizer(str(folder)))
    searched = conversations.search
    anchors = run.stop_anchors(conversations, load_tokenizer(str(folder)))
    assert conversations.search is searched  # the anchors read the conversations the starts were found in
    assert sorted(starts) == ["MSR-000000"] and sorted(anchors) == ["BU-000000", "MSR-000000"]
    log = (tmp_path / "train.log").read_text()
    assert "25% of the rollouts of 1 of 2 GRPO prompts" in log
    assert "stop anchor: weight 1 on the search teacher's stop after its looks in 2 of 2 GRPO prompts" in log
    off = TrainConfig.model_validate({"agent": {"protocol": "json"}})
    assert Run(off, tmp_path).search_starts(conversations, None) == {}


def moc_and_bu_anchors(json_warm_start):
    """The stop anchors of a MOC and a BU episode under the memorized JSON policy's tokenizer: (tokenizer, scripts,
    the teachers' conversations, the anchors)."""
    folder, _, _ = json_warm_start
    tokenizer = load_tokenizer(str(folder))
    scripts = [generate_one("MOC", 0, 5), generate_one("BU", 0, 5)]
    table = {s.id: s for s in scripts}
    conversations = TeacherConversations(scripts, ScriptSimulator(table, sampling="frames"), LIMITS, "json", 128)
    return tokenizer, scripts, conversations, stop_anchors(conversations, tokenizer, None)


def test_the_stop_anchor_trains_the_search_teachers_answer_after_its_looks(json_warm_start, tmp_path):
    tokenizer, scripts, conversations, anchors = moc_and_bu_anchors(json_warm_start)
    assert "scan" not in vars(conversations)  # the anchors read the search teacher's alone: the scan never conversed
    assert sorted(anchors) == ["BU-000000", "MOC-000000"]  # BU's search makes no call: its stop after the scan
    context, answer = anchors["MOC-000000"]
    assert (context, answer) == stop_point(tokenizer, None, scan_then_search_conversation(scripts[0]))[:2]

    trainer, _, _, _, _ = forced_batch(json_warm_start, tmp_path, stop_anchor=50.0, learning_rate=3e-3, beta=0.0)
    trainer.stop_anchors = {"MOC-000000": anchors["MOC-000000"]}  # the batch's episodes have none: the table's

    def p_answer() -> float:
        with torch.no_grad():
            logits = trainer.model(input_ids=torch.tensor([context])).logits[0, -1]
        return float(logits.softmax(-1)[answer])

    before = p_answer()
    model = trainer.model.train()
    losses = {}
    for micro_batches in (1, 4):  # a step cut into more micro-batches holds the same anchor, its pass in one of them
        trainer.current_gradient_accumulation_steps = micro_batches
        trainer.micro_batches_seen = 0  # as a sampled batch sets it
        losses[micro_batches] = [
            float(trainer._compute_loss(model, {"advantages": torch.zeros(4)})) for _ in range(micro_batches)
        ]
    assert losses[1][0] == pytest.approx(-50.0 * math.log(before), rel=1e-3)  # zero advantages: the anchor alone
    assert losses[4][0] == pytest.approx(losses[1][0], rel=1e-4) and losses[4][1:] == [0.0, 0.0, 0.0]
    trainer.train()  # a real update: the GRPO loss plus the anchor's weight times its negative log-likelihood
    logs = [row for row in trainer.state.log_history if "loss" in row]
    assert len(logs) == 1 and 0 < logs[0]["anchor/stop_p"] < 1  # logged as it was read before the step
    assert abs(logs[0]["anchor/stop_p"] - before) < 1e-3
    assert p_answer() > 10 * before  # 0.0002 -> 0.17 when written


def test_each_anchored_episode_is_read_once_a_step_whatever_the_micro_batches(json_warm_start, tmp_path):
    _, _, _, anchors = moc_and_bu_anchors(json_warm_start)
    trainer, _, _, _, _ = forced_batch(json_warm_start, tmp_path, stop_anchor=2.0, beta=0.0)
    trainer.stop_anchors = anchors  # the batch's episodes have none: the table's two

    def nll(key: str) -> float:
        context, answer = anchors[key]
        with torch.no_grad():
            logits = trainer.model(input_ids=torch.tensor([context])).logits[0, -1]
        return -float(logits.log_softmax(-1)[answer])

    model = trainer.model.train()
    trainer.current_gradient_accumulation_steps, trainer.micro_batches_seen = 4, 0
    losses = [float(trainer._compute_loss(model, {"advantages": torch.zeros(4)})) for _ in range(4)]
    assert len(trainer._metrics["train"]["anchor/stop_p"]) == 2  # two passes in four micro-batches, not four
    assert sum(losses) == pytest.approx(2.0 * (nll("BU-000000") + nll("MOC-000000")) / 2, rel=1e-4)
    assert losses[2:] == [0.0, 0.0]


def test_the_other_episodes_stops_take_their_turn_a_step_beside_the_batchs(json_warm_start, tmp_path):
    _, _, _, anchors = moc_and_bu_anchors(json_warm_start)
    trainer, _, _, _, _ = forced_batch(json_warm_start, tmp_path, stop_anchor=2.0, beta=0.0)
    trainer.stop_anchors = {"MOC-000000": anchors["MOC-000000"]}
    trainer.other_anchors, trainer.other_anchors_per_step = [anchors["BU-000000"], anchors["MOC-000000"]], 1

    def nll(anchor) -> float:
        context, answer = anchor
        with torch.no_grad():
            logits = trainer.model(input_ids=torch.tensor([context])).logits[0, -1]
        return -float(logits.log_softmax(-1)[answer])

    model = trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    for step, other in ((0, "BU-000000"), (1, "MOC-000000"), (2, "BU-000000")):  # one a step, round the list
        trainer.state.global_step, trainer.micro_batches_seen = step, 0
        loss = float(trainer._compute_loss(model, {"advantages": torch.zeros(4)}))
        assert loss == pytest.approx(2.0 * (nll(anchors["MOC-000000"]) + nll(anchors[other])), rel=1e-4)
    metrics = trainer._metrics["train"]
    assert len(metrics["anchor/stop_p"]) == 3 and len(metrics["anchor/other_stop_p"]) == 3  # logged apart
    assert metrics["anchor/other_stop_p"][0] == pytest.approx(math.exp(-nll(anchors["BU-000000"])), rel=1e-4)


def test_a_floor_makes_the_other_stops_term_a_hinge_zero_while_the_stop_holds(json_warm_start, tmp_path):
    _, _, _, anchors = moc_and_bu_anchors(json_warm_start)
    trainer, _, _, _, _ = forced_batch(json_warm_start, tmp_path, stop_anchor=2.0, beta=0.0)
    trainer.stop_anchors = {}
    trainer.other_anchors, trainer.other_anchors_per_step = [anchors["BU-000000"]], 1
    context, answer = anchors["BU-000000"]
    with torch.no_grad():
        p = float(trainer.model(input_ids=torch.tensor([context])).logits[0, -1].softmax(-1)[answer])
    model = trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    losses = {}
    for floor in (p / 2, min(2 * p, 0.999)):  # the stop above the floor, then below it
        trainer.other_anchor_floor, trainer.micro_batches_seen = floor, 0
        model.zero_grad()
        loss = trainer._compute_loss(model, {"advantages": torch.zeros(4)})
        loss.backward()
        grads = [param.grad for param in model.parameters() if param.grad is not None]
        losses[floor] = (float(loss.detach()), any(bool(g.abs().sum() > 0) for g in grads))
    assert losses[p / 2] == (0.0, False)  # held: no term and no gradient
    high = min(2 * p, 0.999)
    assert losses[high][0] == pytest.approx(2.0 * (math.log(high) - math.log(p)), rel=1e-3) and losses[high][1]
    assert trainer._metrics["train"]["anchor/other_below_floor"] == [0.0, 1.0]


def test_a_run_anchors_the_stops_of_further_scripts_of_the_kinds_named(json_warm_start, tmp_path):
    from train.pipeline import Run, stop_anchor_scripts

    folder, _, _ = json_warm_start
    cfg = TrainConfig.model_validate(
        {
            "data": {"tasks": ["NC", "CC"], "train_counts": {"CC": 3}, "grpo_counts": {"CC": 0}},
            "agent": {"protocol": "json"},
            "sft": {"teacher": "search"},
            "grpo": {
                "stop_anchor": 1.0,
                "stop_anchor_counts": {"CC": 3},
                "stop_anchor_per_step": 2,
                "stop_anchor_floor": 0.9,
            },
        }
    )
    scripts = stop_anchor_scripts(cfg)
    assert [s.id for s in scripts] == ["CC-000003", "CC-000004", "CC-000005"]  # after the warm start's and GRPO's
    tokenizer = load_tokenizer(str(folder))
    anchors = Run(cfg, tmp_path).other_stop_anchors(tokenizer)
    run = Run(cfg, tmp_path)
    perception = make_training_perception(cfg, {s.id: s for s in scripts})
    expected = stop_anchors(run.teacher_conversations(scripts, perception), tokenizer, None)
    assert len(anchors) == 3 and sorted(map(repr, anchors)) == sorted(map(repr, expected.values()))
    for context, answer in anchors:  # each at the teacher's answer after its looks
        assert "answer" in tokenizer.decode([answer]) and tokenizer.decode(context).endswith("assistant\n")
    log = (tmp_path / "train.log").read_text()
    assert "stop anchor on other episodes: 3 of 3 scripts (CC 3), 2 a step, a hinge under p=0.9" in log
    assert Run(TrainConfig.model_validate({}), tmp_path).other_stop_anchors(tokenizer) == []


def test_further_anchored_scripts_need_the_anchors_weight_and_known_kinds():
    with pytest.raises(ValidationError, match="stop_anchor_counts needs grpo.stop_anchor > 0"):
        TrainConfig.model_validate({"sft": {"teacher": "search"}, "grpo": {"stop_anchor_counts": {"CC": 2}}})
    with pytest.raises(ValidationError, match="stop_anchor_floor needs grpo.stop_anchor_counts"):
        TrainConfig.model_validate(
            {"sft": {"teacher": "search"}, "grpo": {"stop_anchor": 1.0, "stop_anchor_floor": 0.9}}
        )
    with pytest.raises(ValidationError, match=r"names \['BU'\], not in data.tasks"):
        TrainConfig.model_validate(
            {"sft": {"teacher": "search"}, "grpo": {"stop_anchor": 1.0, "stop_anchor_counts": {"BU": 2}}}
        )


def scan_then_search_conversation(script):
    table = {script.id: script}
    agent = Agent(scan_then_search(table, "json", 1, 128), ScriptSimulator(table, sampling="frames"), LIMITS)
    return agent.converse(script.episode)[1]


def test_the_stop_anchor_needs_a_search_warm_start():
    with pytest.raises(ValidationError, match="stop_anchor > 0 needs sft.teacher=search"):
        TrainConfig.model_validate({"grpo": {"stop_anchor": 1.0}})
