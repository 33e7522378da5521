"""The option reader: real MiniLM weights, real items from the simulator, real optimizer steps, and the wrapper that
makes a master's choice-task answers the reader's inside the real agent loop."""

from __future__ import annotations

import random

import pytest
import torch

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.models import READER_BASE, ensure_model
from agentcvr.policies.read_answers import ReaderAnswers, masters_answer
from agentcvr.policies.scripted import ScriptedPolicy
from agentcvr.reader import Encoding, OptionReader, Reader, choose
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator
from train.reader import reading_items
from train.reader_fit import train_step

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base():
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(0)
    folder = ensure_model(READER_BASE, progress=False)
    return OptionReader(AutoModel.from_pretrained(folder)), Encoding(AutoTokenizer.from_pretrained(folder))


def test_items_carry_labels_from_the_script_and_never_the_answer_text():
    scripts = [generate_one("PEA", 0, 3), generate_one("BU", 0, 3)]
    items = reading_items(scripts, Limits(max_turns=4))
    for script, item in zip(scripts, items, strict=True):
        gold = script.answer if isinstance(script.answer, list) else [script.answer]
        assert sum(item.labels) == len(gold)
        assert item.evidence.startswith("Video 1, seen")
        assert "answer" not in item.evidence.lower()


def test_encoding_fits_512_tokens_and_gives_every_look_a_share(base):
    _, encoding = base
    item = reading_items([generate_one("NC", 0, 3)], Limits(max_turns=4))[0]
    ids, types, spans = encoding.encode(item, list(range(len(item.options))))
    assert len(ids) <= 512 and len(spans) == len(item.options)
    text = encoding.tokenizer.decode(ids)
    assert all(f"video {v}, heard" in text for v in (1, 2, 3, 4))  # the later looks were not cut away


def test_steps_lower_the_loss_on_the_same_batch(base):
    model, encoding = base
    items = reading_items([generate_one("PI", 0, 3), generate_one("CC", 1, 3)], Limits(max_turns=4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    losses = [train_step(model, encoding, optimizer, items, random.Random(0)) for _ in range(4)]
    assert losses[-1] < losses[0]


def test_choose_takes_the_best_or_every_positive():
    assert choose([0.1, 2.0, -1.0], multi=False) == [1]
    assert choose([0.5, -2.0, 1.0], multi=True) == [0, 2]
    assert choose([-0.5, -2.0], multi=True) == [0]


def test_a_saved_reader_answers_as_before_and_replaces_only_choice_answers(base, tmp_path):
    model, encoding = base
    Reader(model, encoding).save(tmp_path / "reader")
    reader = Reader.load(tmp_path / "reader")
    pea, fsa = generate_one("PEA", 0, 3), generate_one("FSA", 0, 3)
    table = {pea.id: pea, fsa.id: fsa}
    observe = {
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "observe", "arguments": '{"video": 1, "focus": "error"}'},
            }
        ]
    }
    master = ScriptedPolicy([observe, '<tool_call>{"name": "answer", "arguments": {"answer": "A"}}</tool_call>'])
    result = Agent(ReaderAnswers(master, reader), ScriptSimulator(table), Limits(max_turns=4)).run(pea.episode)
    item = reading_items([pea], Limits(max_turns=4))[0]
    assert result.answer in {"A", "B", "C", "D"}
    assert result.steps[-1].thought and "the master wrote A" in result.steps[-1].thought
    scores = reader.scores(pea.episode, [])
    assert len(scores) == len(item.options)
    master = ScriptedPolicy(['<tool_call>{"name": "answer", "arguments": {"answer": "10,20"}}</tool_call>'])
    result = Agent(ReaderAnswers(master, reader), ScriptSimulator(table), Limits(max_turns=4)).run(fsa.episode)
    assert result.answer == "10,20"  # FSA's interval stays the master's


def test_a_packed_reader_is_small_and_scores_as_the_fine_tuned_one(base, tmp_path):
    from agentcvr.reader_delta import pack, unpack

    model, encoding = base  # fine-tuned by the test above when run in order; any weights will do
    with torch.no_grad():
        model.encoder.encoder.layer[0].attention.self.query.weight.add_(0.01)
    Reader(model, encoding).save(tmp_path / "tuned")
    sizes = pack(tmp_path / "tuned", ensure_model(READER_BASE, progress=False), tmp_path / "reader.safetensors")
    assert sizes["bytes"] < 25_000_000
    rebuilt = Reader.load(unpack(tmp_path / "reader.safetensors", ensure_model(READER_BASE), tmp_path / "rebuilt"))
    episode = generate_one("PI", 2, 3).episode
    tuned, again = Reader(model, encoding).scores(episode, []), rebuilt.scores(episode, [])
    assert max(abs(a - b) for a, b in zip(tuned, again, strict=True)) < 0.05


def test_train_reader_command_writes_a_curve_and_a_reader(tmp_path):
    from typer.testing import CliRunner

    from agentcvr.cli import app

    out = tmp_path / "run"
    args = ["train-reader", "--out", str(out), "--tasks", "PI", "--train-per-task", "2", "--heldout-per-task", "2"]
    result = CliRunner().invoke(app, [*args, "--examples", "8", "--eval-every", "8"])
    assert result.exit_code == 0, result.output
    curve = [line for line in (out / "curve.jsonl").read_text().splitlines() if line]
    assert len(curve) == 2 and '"examples": 8' in curve[-1]
    assert (out / "curve.png").stat().st_size > 0
    assert (out / "reader" / "head.pt").exists()
    again = CliRunner().invoke(app, [*args, "--examples", "8"])  # finished: resumes to nothing more
    assert again.exit_code == 0 and len((out / "curve.jsonl").read_text().splitlines()) == 2
    bad = CliRunner().invoke(app, ["train-reader", "--out", str(out), "--tasks", "FSA"])
    assert bad.exit_code != 0 and "not choice task kinds" in bad.output


def test_rollouts_with_a_reader_take_its_answers_on_choice_tasks(warm_start, base, tmp_path):
    from tests.train.conftest import trainer_over

    model, encoding = base
    Reader(model, encoding).save(tmp_path / "reader")
    grpo = {"num_generations": 2, "prompts_per_step": 2, "max_completion_length": 512, "temperature": 0.1}
    agent = {"max_turn_tokens": 48, "reader": str(tmp_path / "reader")}
    trainer, rows, _, cfg = trainer_over(warm_start, tmp_path, agent=agent, grpo=grpo)
    inputs = [dict(row) for row in rows for _ in range(cfg.grpo.num_generations)]
    trainer.batch_rows = inputs
    torch.manual_seed(1)
    out = trainer.rollout_func([row["prompt"] for row in inputs], trainer)
    answered = [r for r in out["trace"] if r.answer is not None]
    assert answered  # the memorized policy answers its PI episodes
    for result in answered:  # PI is a choice task: each answer is the reader's, the policy's own kept in the thought
        assert masters_answer(result.steps[-1].thought) is not None
        assert result.answer in {"A", "B", "C", "D", "E", "F"}
