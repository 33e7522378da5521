"""Scoring parity: our `official` mode equals an independent re-implementation of the official scripts' rules (written
here from their text, sharing no code with eval/), per task and overall; `strict` differs exactly where it should."""

import json
import math
import re
from pathlib import Path

import pytest

from eval.crossvid.loader import load_crossvid
from eval.crossvid.records import JudgeRecord, Prediction
from eval.crossvid.sample_tree import write_crossvid
from eval.summary import official_item, strict_item, summarize

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "crossvid-sample"

# --- the official rules, re-implemented from the scripts (BU.py, FSA.py, score_CCQA.py ...) -------------------------


def reference_scores(rows):
    """rows: (task, gold, scoring points, status, output, judge reply) -> {task: score or None}, O.Avg."""
    sums = {}
    for task, gold, _points, status, output, reply in rows:
        if status != "ok":
            continue  # evaluate() returned None: never added to results
        total, weight = sums.setdefault(task, [0.0, 0.0]), None
        if task == "CCQA":
            found = re.search(r"<score>\s*(.*?)\s*</score>", reply or "", re.DOTALL)
            try:
                parsed = json.loads(found.group(1).strip() if found else "")
                item = sum(parsed["coverage"] + parsed["correctness"])
                weight = 2 * len(parsed["coverage"])
            except Exception:
                continue
            total[0] += item
            total[1] += weight
        elif task == "FSA":
            try:
                first, second = output.split(",")
                s, e = float(first), float(second)
                inter = max(0, min(e, gold[1]) - max(s, gold[0]))
                union = max(e, gold[1]) - min(s, gold[0])
                iou = 0.0 if union == 0 else inter / union
            except Exception:
                iou = 0
            total[0] += iou
            total[1] += 1
        else:
            expected = "".join(gold) if task == "BU" else gold
            total[0] += output == expected
            total[1] += 1
    per_task = {task: (s / w if w else None) for task, (s, w) in sums.items()}
    return per_task


# --- constructed predictions ---------------------------------------------------------------------------------------

JUDGE_REPLIES = [
    '<score>{"coverage": [true, false], "correctness": [true, false]}</score>',
    'Sure. <score>\n{"coverage": [1, 1, 0], "correctness": [1, 0, 0]}\n</score>',  # 1/0 count; 3 entries for 2 points
    '<score>{"coverage": ["true", false], "correctness": [true, false]}</score>',  # a string: the item drops
    '{"coverage": [true, true], "correctness": [true, true]}',  # no tags: dropped
    '<score>{"coverage": [true, true], "correctness": [true]}</score>',  # length mismatch: kept
]


def outputs_for(task, gold):
    """(label, status, output) rows for one item: right, wrong, and the raw-string traps."""
    if task == "FSA":
        s, e = gold
        return [
            ("right", "ok", f"{s},{e}"),
            ("spaces", "ok", f" {s} , {e}\n"),
            ("partial", "ok", f"{s + 1},{e + 2}"),
            ("reversed", "ok", f"{e},{s}"),
            ("disjoint", "ok", f"{e + 10},{e + 20}"),
            ("brackets", "ok", f"[{s}, {e}]"),
            ("suffix", "ok", f"{s}s,{e}s"),
            ("prose", "ok", f"from {s}s to {e}s"),
            ("none", "ok", None),
            ("failed", "failed", None),
        ]
    right = "".join(gold) if isinstance(gold, list) else gold
    wrong = "Z" if task != "PSS" else "->".join(reversed(right.split("->")))
    rows = [
        ("right", "ok", right),
        ("wrong", "ok", wrong),
        ("trailing", "ok", right + " "),
        ("stripped", "ok", right.strip()),
        ("lower", "ok", right.lower()),
        ("prose", "ok", f"The answer is {right.strip()}."),
        ("none", "ok", None),
        ("failed", "failed", None),
    ]
    if task == "BU":
        rows.append(("reordered", "ok", right[::-1]))
    if task == "PSS":
        rows.append(("commas", "ok", right.replace("->", ", ")))
    return rows


def constructed(items):
    records, rows, labels = [], [], []
    for item in items:
        gold, task = item.raw["answer"], item.task
        if task == "CCQA":
            points = len(item.raw["scoring_points"])
            cases = [("judge", "ok", "A sieve and a towel.", reply) for reply in JUDGE_REPLIES]
            cases += [("failed", "failed", None, None), ("judge-error", "ok", "text", None)]
        else:
            points = 0
            cases = [(label, status, output, None) for label, status, output in outputs_for(task, gold)]
        for n, (label, status, output, reply) in enumerate(cases):
            judge = JudgeRecord(reply=reply) if task == "CCQA" and status == "ok" else None
            key = f"{item.key}#{n}"
            records.append(
                Prediction(
                    key=key,
                    task=task,
                    item_id=item.raw["id"],
                    status=status,
                    output=output,
                    gold=gold,
                    points=points,
                    judge=judge,
                )
            )
            rows.append((task, gold, points, status, output, reply))
            labels.append(label)
    return records, rows, labels


def check_parity(items):
    records, rows, labels = constructed(items)
    expected = reference_scores(rows)
    ours = summarize(records).official
    for task, value in expected.items():
        assert ours[task] == pytest.approx(value), task
    assert ours["O.Avg"] == pytest.approx(sum(expected.values()) / 10)
    for record, label in zip(records, labels, strict=True):
        official, strict = official_item(record), strict_item(record)
        if label == "failed":
            assert official is None and strict[0] == 0.0  # dropped officially, wrong under strict
        elif label in ("right", "spaces", "partial", "reversed", "disjoint", "wrong", "none"):
            assert strict[0] == pytest.approx(official[0]), (record.key, label)  # nothing to normalize
        elif label in ("stripped", "lower", "prose", "trailing", "brackets", "suffix", "reordered", "commas"):
            gold_is_raw = record.output == ("".join(record.gold) if record.task == "BU" else record.gold)
            if record.task == "FSA":
                assert official[0] == 0.0 and strict[0] == 1.0, (record.key, label)
            elif not gold_is_raw:
                assert official[0] == 0.0 and strict[0] == 1.0, (record.key, label)  # normalization rescues it
            else:
                assert official[0] == strict[0] == 1.0
    return records


def test_parity_on_the_project_fixtures(tmp_path):
    items, _ = load_crossvid(write_crossvid(tmp_path, media=False))
    records = check_parity(items)
    moc = [r for r in records if r.task == "MOC"]
    assert [official_item(r)[0] for r in moc if r.output in ("B ", "B")] == [1.0, 0.0]  # gold "B ": raw equality


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="the real CrossVid sample lives outside the repository")
def test_parity_on_the_real_sample_items():
    items, _ = load_crossvid(SAMPLE.parent, qa_dir=SAMPLE)
    check_parity(items)


def test_ccqa_is_pooled_and_drops_what_the_scorer_drops():
    def ccqa(key, reply, status="ok"):
        judge = JudgeRecord(reply=reply) if status == "ok" else None
        return Prediction(key=key, task="CCQA", item_id=key, status=status, output="x", gold="g", points=4, judge=judge)

    records = [
        ccqa("a", JUDGE_REPLIES[0]),  # 2 of 4
        ccqa("b", JUDGE_REPLIES[1]),  # 3 of 6: pooled by the judge's list length, not by the points
        ccqa("c", JUDGE_REPLIES[2]),  # dropped
        ccqa("d", None, "failed"),  # dropped
    ]
    summary = summarize(records)
    assert summary.official["CCQA"] == pytest.approx(5 / 10)
    assert summary.rows["CCQA"].dropped == 2
    # strict: every item 2 x 4 points; "true" counts; correctness only where covered; lists cut to the points
    assert summary.strict["CCQA"] == pytest.approx((2 + 3 + 2 + 0) / 32)


def test_fsa_nan_reply_makes_the_task_mean_nan_officially():
    record = Prediction(key="f", task="FSA", item_id=0, status="ok", output="nan,5", gold=[1, 4])
    assert math.isnan(summarize([record]).official["FSA"])
    assert summarize([record]).strict["FSA"] == 0.0


def test_a_task_with_only_failures_has_no_official_score():
    record = Prediction(key="n", task="NC", item_id=0, status="failed", gold="B")
    summary = summarize([record])
    assert summary.official["NC"] is None and summary.strict["NC"] == 0.0
    assert summary.official["C.Avg"] is None


def test_doctests():
    import doctest

    from eval.crossvid import frames, judge, uav

    for module in (uav, judge, frames):
        assert doctest.testmod(module).failed == 0, module.__name__
