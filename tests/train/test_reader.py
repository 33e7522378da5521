"""The option reader: real MiniLM sentence vectors, real items from the simulator, real optimizer steps, and the
wrapper that makes a master's choice-task answers the reader's inside the real agent loop."""

from __future__ import annotations

import json

import pytest
import torch

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.models import READER_BASE, ensure_model
from agentcvr.policies.read_answers import ReaderAnswers, masters_answer
from agentcvr.policies.refine import FINE_SPACING, REFINE_THOUGHT
from agentcvr.policies.scripted import ScriptedPolicy
from agentcvr.policies.teaching import write_turn
from agentcvr.reader import READ_TASKS, Reader, ReaderHead, choose, prepare, word_overlap, words
from agentcvr.reading import reference_segment
from agentcvr.sentences import SentenceEncoder
from agentcvr.tasks import TASKS
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator
from train.reader import loss_of, reading_items

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def encoder():
    return SentenceEncoder(ensure_model(READER_BASE, progress=False), cache_size=2_000)


@pytest.fixture
def base(encoder):
    torch.manual_seed(0)
    return Reader(encoder, ReaderHead(READ_TASKS, encoder.width, 32), READER_BASE)


def test_items_carry_labels_from_the_script_and_never_the_answer_text():
    scripts = [generate_one("PEA", 0, 3), generate_one("BU", 0, 3)]
    items = reading_items(scripts, Limits(max_turns=4))
    for script, item in zip(scripts, items, strict=True):
        gold = script.answer if isinstance(script.answer, list) else [script.answer]
        assert sum(item.labels) == len(gold)
        assert item.evidence.startswith("Video 1, seen")
        assert "answer" not in item.evidence.lower()


def test_evidence_looks_follow_the_scan_with_the_evidence_windows_on_the_share_asked():
    scripts = [generate_one("MSR", i, 3) for i in range(6)]
    plain = reading_items(scripts, Limits(max_turns=4))
    every = reading_items(scripts, Limits(max_turns=4), evidence_looks=1.0)
    for script, scan, both in zip(scripts, plain, every, strict=True):
        assert both.evidence.startswith(scan.evidence)  # the same scan first
        for item in script.evidence:  # then each evidence window, under its own header
            assert f"Video {item.video}, seen {item.start:g}-{item.end:g} s:" in both.evidence
            assert f"seen {item.start:g}-{item.end:g} s:" not in scan.evidence
        assert both.labels == scan.labels
    half = reading_items(scripts, Limits(max_turns=4), evidence_looks=0.5, seed=1)
    assert 0 < sum(h.evidence != p.evidence for h, p in zip(half, plain, strict=True)) < len(scripts)
    assert half == reading_items(scripts, Limits(max_turns=4), evidence_looks=0.5, seed=1)  # the coin is seeded
    with pytest.raises(ValueError, match="between 0 and 1"):
        reading_items(scripts, Limits(max_turns=4), evidence_looks=1.5)


def test_search_looks_follow_every_scan_with_the_search_turn_where_the_kind_has_one():
    nc, bu = generate_one("NC", 0, 3), generate_one("BU", 0, 3)
    plain = reading_items([nc, bu], Limits(max_turns=4))
    searched = reading_items([nc, bu], Limits(max_turns=4), search=True)
    assert searched[0].evidence.startswith(plain[0].evidence)  # the same scan and listens first
    for video in nc.episode.videos:  # then each video in NC's three windows, under their own headers
        third = round(video.duration / 3, 1)
        assert f"Video {video.index}, seen 0-{third:g} s:" in searched[0].evidence
    assert searched[1] == plain[1]  # BU has no search turn
    assert searched[0].labels == plain[0].labels


def test_items_become_one_vector_per_sentence_with_its_video(encoder):
    item = reading_items([generate_one("MSR", 0, 3)], Limits(max_turns=4))[0]
    vectors = prepare(item, encoder)
    assert vectors.options.shape == (len(item.options), encoder.width)
    assert vectors.lines.shape[0] == len(vectors.videos) > item.evidence.count("\n")  # frames split into sentences
    assert set(vectors.videos.tolist()) == {1, 2}
    assert torch.allclose(vectors.lines.norm(dim=-1), torch.ones(len(vectors.lines)), atol=1e-4)


def test_the_encoder_cache_stays_bounded_and_answers_the_same(encoder):
    small = SentenceEncoder(ensure_model(READER_BASE, progress=False), cache_size=3)
    texts = ["A chef cracks eggs.", "A peacock fans its tail.", "Rain falls.", "A frog croaks.", "Rain falls."]
    again = small.vectors(texts)
    assert len(small._cache) == 3
    assert torch.allclose(again, encoder.vectors(texts), atol=1e-5)


def test_steps_lower_the_loss_on_the_same_items(base, encoder):
    items = reading_items([generate_one("PI", 0, 3), generate_one("CC", 1, 3)], Limits(max_turns=4))
    vectors = [prepare(item, encoder) for item in items]
    optimizer = torch.optim.Adam(base.head.parameters(), lr=1e-2)
    losses = []
    for _ in range(5):
        loss = torch.stack([loss_of(base.head(v), item) for v, item in zip(vectors, items, strict=True)]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_options_score_the_same_in_any_order(base, encoder):
    """No slot or letter input: shuffling the options shuffles their scores, nothing else."""
    item = reading_items([generate_one("NC", 0, 3)], Limits(max_turns=4))[0]
    order = [2, 0, 3, 1]
    shuffled = type(item)(item.id, item.task, item.question, [item.options[i] for i in order], item.evidence, [])
    with torch.no_grad():
        scores, again = base.head(prepare(item, encoder)), base.head(prepare(shuffled, encoder))
    assert torch.allclose(again, scores[order], atol=1e-5)


def test_word_overlap_weighs_a_shared_word_by_its_rarity_among_the_lines():
    lines = [
        "obj_5 (silver bicycle) is at the bottom left of the frame.",
        "obj_2 (blue car) is at the center right of the frame.",
        "obj_2 (blue car) is at the top right of the frame.",
    ]
    overlap = word_overlap(
        lines, ["Where is obj_5 in view A?", "Bottom left of the frame", "Center right of the frame"]
    )
    assert words("Where is obj_5 in view A?") == {"obj_5", "view"}  # ids whole, stop words out
    assert overlap.shape == (3, 3)
    assert overlap[0, 0] > 0 and overlap[1, 0] == overlap[2, 0] == 0  # only the line naming obj_5 shares it
    assert overlap[0, 1] > overlap[1, 1]  # "bottom left" is the first line's, "frame" is everyone's
    assert overlap[1, 2] > overlap[0, 2]
    frame_only = word_overlap(lines, ["frame"])
    assert torch.allclose(frame_only, torch.full((3, 1), torch.log(torch.tensor(2.0)).item()))  # in every line


def test_a_lexical_head_reads_shared_words_and_says_so_in_its_folder(encoder, tmp_path):
    torch.manual_seed(0)
    lexical = Reader(encoder, ReaderHead(READ_TASKS, encoder.width, 32, lexical=True), READER_BASE)
    item = reading_items([generate_one("MSR", 0, 3)], Limits(max_turns=4))[0]
    vectors = prepare(item, encoder)
    assert vectors.overlap.shape == (len(vectors.lines), 1 + len(item.options))
    before = lexical.head(vectors).detach()
    with torch.no_grad():
        lexical.head.word_scale.fill_(1.0)
    assert not torch.allclose(lexical.head(vectors).detach(), before)  # the words now count
    lexical.save(tmp_path / "reader")
    assert json.loads((tmp_path / "reader" / "reader.json").read_text())["lexical"] is True
    again = Reader.load(tmp_path / "reader", encoder=encoder)
    assert again.head.lexical and torch.allclose(again.head(vectors), lexical.head(vectors))
    assert not Reader.load("scan-v1", encoder=encoder).head.lexical  # a reader saved before the words reads without


def test_choose_takes_the_best_or_every_positive():
    assert choose([0.1, 2.0, -1.0], multi=False) == [1]
    assert choose([0.5, -2.0, 1.0], multi=True) == [0, 2]
    assert choose([-0.5, -2.0], multi=True) == [0]


def test_a_saved_reader_answers_as_before_and_replaces_only_choice_answers(base, tmp_path):
    base.save(tmp_path / "reader")
    reader = Reader.load(tmp_path / "reader", encoder=base.encoder)
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
    assert reader.scores(pea.episode, []) == [0.0] * len(item.options)  # nothing observed, nothing preferred
    with torch.no_grad():  # the reloaded head scores the scan's evidence as the saved one did
        scores = reader.head(prepare(item, base.encoder))
        assert torch.allclose(scores, base.head(prepare(item, base.encoder)), atol=1e-6)
    assert scores.abs().sum() > 0
    master = ScriptedPolicy(['<tool_call>{"name": "answer", "arguments": {"answer": "10,20"}}</tool_call>'])
    result = Agent(ReaderAnswers(master, reader), ScriptSimulator(table), Limits(max_turns=4)).run(fsa.episode)
    assert result.answer == "10,20"  # FSA's interval stays the master's


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
    assert (out / "reader" / "head.pt").exists() and (out / "sentences.pt").exists()
    again = CliRunner().invoke(app, [*args, "--examples", "8"])  # finished: resumes to nothing more
    assert again.exit_code == 0 and len((out / "curve.jsonl").read_text().splitlines()) == 2
    other = CliRunner().invoke(app, [*args, "--examples", "16", "--lr", "0.01"], env={"COLUMNS": "400"})
    assert other.exit_code == 2 and "written under another run spec" in other.output  # the run engine's refusal
    assert "it differs in lr: 0.01 != 0.001 (this run's value first)" in other.output, other.output
    bad = CliRunner().invoke(app, ["train-reader", "--out", str(out), "--tasks", "FSA"])
    assert bad.exit_code != 0 and "not choice task kinds" in bad.output
    windowed = CliRunner().invoke(app, [*args, "--examples", "8", "--windows", "2"], env={"COLUMNS": "400"})
    assert windowed.exit_code == 2 and "windows: 2 != 1" in windowed.output  # other looks: other items, refused
    out = tmp_path / "windowed"
    windowed = CliRunner().invoke(app, [*args[:2], str(out), *args[3:], "--examples", "8", "--windows", "2"])
    assert windowed.exit_code == 0, windowed.output
    assert json.loads((out / "reader" / "reader.json").read_text())["windows"] == 2


def test_rollouts_with_a_reader_take_its_answers_on_choice_tasks(warm_start, base, tmp_path):
    from tests.train.conftest import trainer_over

    base.save(tmp_path / "reader")
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


@pytest.mark.parametrize("name", ["scan-v2", "scan-v1", "scan-evidence-v1"])
def test_the_shipped_readers_load_by_name_and_read_fresh_episodes_well_above_chance(encoder, name):
    """The shipped readers (docs/reader.md) on scripts of a seed they were neither trained nor selected on."""
    from train.reader_fit import accuracy, baselines

    reader = Reader.load(name, encoder=encoder)
    scripts = [generate_one(task, i, 13) for task in READ_TASKS for i in range(8)]
    items = reading_items(scripts, Limits(max_turns=4))
    table = accuracy(reader.head, items, [prepare(item, encoder) for item in items])
    chance = baselines(items, items)["chance"]["all"]
    assert chance < 0.25 and table["all"] > 0.4, table


def test_a_damaged_or_missing_reader_is_refused_by_name(tmp_path, encoder):
    import shutil

    from agentcvr.components import make_policy
    from agentcvr.reader import SHIPPED

    shutil.copytree(SHIPPED["scan-v1"], tmp_path / "copy")
    head = tmp_path / "copy" / "head.pt"
    damaged = bytearray(head.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    head.write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="damaged"):
        Reader.load(tmp_path / "copy", encoder=encoder)
    with pytest.raises(FileNotFoundError, match="scan-v2, scan-v1"):
        Reader.load("scan-v9", encoder=encoder)
    assert not isinstance(make_policy("random", reader="none"), ReaderAnswers)


def test_with_scan_the_reader_answers_choice_tasks_after_the_scan_without_the_master(base):
    pi, fsa = generate_one("PI", 0, 3), generate_one("FSA", 0, 3)
    table = {pi.id: pi, fsa.id: fsa}
    never = ScriptedPolicy([])  # asked for a turn, it would fail the episode
    agent = Agent(ReaderAnswers(never, base, who_looks="scan"), ScriptSimulator(table), Limits(max_turns=4))
    result = agent.run(pi.episode)
    item = reading_items([pi], Limits(max_turns=4))[0]  # the scan teacher's looks at the same episode
    assert [s.tool for s in result.steps[:-1]] == ["listen", "listen", "observe", "observe"]
    assert result.answer == "ABCDEF"[choose(base.head(prepare(item, base.encoder)).tolist(), False)[0]]
    assert "after the scan" in result.steps[-1].thought
    # FSA: the reference segment, then video 2 searched for it, then the matched segment closer until the frames are
    # fine (in the simulator the stamps are exact already: the closer looks return the same segment); the match answers
    agent = Agent(ReaderAnswers(never, base, who_looks="scan"), ScriptSimulator(table), Limits(max_turns=8))
    result = agent.run(fsa.episode)
    looked = [(s.tool, s.arguments["video"], s.arguments["start"], s.arguments["focus"]) for s in result.steps[:2]]
    segment = reference_segment(fsa.episode)
    assert looked == [("observe", 1, segment[0], ""), ("observe", 2, 0, "")]  # the loop supplies both focuses
    closer = result.steps[2:-1]
    assert closer and all(s.thought == REFINE_THOUGHT and s.arguments["video"] == 2 for s in closer)
    spans = [s.arguments["end"] - s.arguments["start"] for s in closer]
    assert spans == sorted(spans, reverse=True) and spans[-1] / 16 <= FINE_SPACING  # each closer, then fine enough
    first, last = map(float, result.answer.split(","))
    assert all(s.arguments["start"] <= first and last <= s.arguments["end"] for s in closer)  # each around the match
    assert TASKS["FSA"].official(result.answer, fsa.episode) == 1.0
    short = Agent(ReaderAnswers(never, base, who_looks="scan"), ScriptSimulator(table), Limits(max_turns=3))
    assert short.run(fsa.episode).answer == result.answer  # the last turn answers, closer looks or not
    pss = generate_one("PSS", 0, 3)
    master = ScriptedPolicy(['<tool_call>{"name": "answer", "arguments": {"answer": "1->2->3"}}</tool_call>'])
    agent = Agent(ReaderAnswers(master, base, who_looks="scan"), ScriptSimulator({pss.id: pss}), Limits(max_turns=4))
    assert agent.run(pss.episode).answer == "1->2->3"  # PSS: the master's turn


def test_after_the_master_answers_fsa_the_wrapper_looks_closer_and_answers_without_asking_it_again(base):
    fsa = generate_one("FSA", 0, 3)
    start, end = reference_segment(fsa.episode)
    calls = [{"video": 1, "start": start, "end": end}, {"video": 2}]
    turns = [write_turn([("observe", call)], "json", "m").content for call in calls]
    master = ScriptedPolicy([*turns, json.dumps({"action": "answer", "final_answer": "0,1"})], protocol="json")
    agent = Agent(ReaderAnswers(master, base), ScriptSimulator({fsa.id: fsa}), Limits(max_turns=8))
    result = agent.run(fsa.episode)  # a fourth master turn would fail the episode: the scripted master has three
    assert [s.thought for s in result.steps[2:-1]] and all(s.thought == REFINE_THOUGHT for s in result.steps[2:-1])
    assert "after looking closer" in result.steps[-1].thought
    assert TASKS["FSA"].official(result.answer, fsa.episode) == 1.0  # the match, not the master's 0,1


def test_with_search_the_reader_reads_the_scan_and_the_search_turn_as_its_items_hold_them(base):
    pea = generate_one("PEA", 0, 3)
    never = ScriptedPolicy([])  # asked for a turn, it would fail the episode
    agent = Agent(ReaderAnswers(never, base, who_looks="search"), ScriptSimulator({pea.id: pea}), Limits(max_turns=4))
    result = agent.run(pea.episode)
    turns = [step.turn for step in result.steps[:-1]]
    assert turns.count(0) == len(pea.episode.videos) and turns.count(1) > 0  # the scan, then the search's turn
    item = reading_items([pea], Limits(max_turns=4), search=True)[0]  # what `--search-looks` trains on
    assert result.answer == "ABCDEF"[choose(base.head(prepare(item, base.encoder)).tolist(), False)[0]]


def test_a_reader_of_windowed_looks_says_so_and_the_scan_before_it_cuts_its_looks_the_same_way(base, tmp_path):
    Reader(base.encoder, base.head, READER_BASE, windows=3).save(tmp_path / "reader")
    reader = Reader.load(tmp_path / "reader", encoder=base.encoder)
    assert reader.windows == 3
    assert Reader.load("scan-v1", encoder=base.encoder).windows == 1  # saved before windows existed: whole looks
    moc = generate_one("MOC", 0, 3)  # two views
    del reader.matched_else_read["MOC"]  # read by the head alone, as the items below are
    never = ScriptedPolicy([])  # asked for a turn, it would fail the episode
    agent = Agent(ReaderAnswers(never, reader, who_looks="scan"), ScriptSimulator({moc.id: moc}), Limits(max_turns=4))
    result = agent.run(moc.episode)
    assert [s.arguments["video"] for s in result.steps[:-1]] == [1, 1, 1, 2, 2, 2]
    item = reading_items([moc], Limits(max_turns=4), windows=3)[0]  # the items such a reader was trained on
    assert result.answer == "ABCDEF"[choose(reader.head(prepare(item, reader.encoder)).tolist(), False)[0]]


def test_a_reader_folder_resumes_only_under_its_spec_and_reads_settings_written_before_specs(tmp_path):
    from agentcvr.spec import SpecMismatch
    from train.reader import ReaderSpec, resume_folder

    spec = ReaderSpec(
        tasks=["BU", "NC"], train_per_task=1600, heldout_per_task=100, seed=0, lr=1e-3, width=128, encoder="minilm-l6"
    )
    old = {"tasks": ["BU", "NC"], "train_per_task": 1600, "heldout_per_task": 100, "seed": 0, "lr": 0.001}
    (tmp_path / "settings.json").write_text(json.dumps({**old, "width": 128, "encoder": "minilm-l6"}, indent=2))
    resume_folder(tmp_path, spec)  # the settings.json train-reader wrote before specs: the same settings
    assert ReaderSpec.model_validate_json((tmp_path / "settings.json").read_text()) == spec
    other = spec.model_copy(update={"tasks": ["NC"], "seed": 3})
    with pytest.raises(SpecMismatch, match=r'seed: 3 != 0; tasks: \["NC"\] != \["BU", "NC"\]'):
        resume_folder(tmp_path, other)
    (tmp_path / "settings.json").write_text(json.dumps(old))  # written by a version without width and encoder
    with pytest.raises(SpecMismatch, match="does not hold a reader spec \\(width: Field required\\)"):
        resume_folder(tmp_path, spec)
