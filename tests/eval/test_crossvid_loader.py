"""The CrossVid loader on the project's fixture tree (every task, real quirks) and on the real sample items."""

from pathlib import Path

import pytest

from agentcvr.tasks import TASK_ORDER
from eval.crossvid import uav
from eval.crossvid.loader import load_crossvid, missing_media
from eval.crossvid.sample_tree import ITEMS, write_crossvid

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "crossvid-sample"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return write_crossvid(tmp_path_factory.mktemp("crossvid"))


def test_every_task_loads_into_episodes(tree):
    items, problems = load_crossvid(tree)
    assert problems == []
    assert [i.error for i in items if i.error] == []
    assert sorted({i.task for i in items}) == sorted(TASK_ORDER)
    assert missing_media(items) == {}
    by_key = {i.key: i.episode for i in items}
    assert len(by_key["BU/1"].videos) == 3 and len(by_key["BU/0"].videos) == 4  # both BU layouts
    pea = by_key["PEA/0"].videos[0]
    assert (pea.offset, pea.duration) == (1.0, 8.0)  # int(begin)..int(end), as PEA.py cuts
    pi = by_key["PI/0"]
    assert [(v.label, v.offset, v.duration) for v in pi.videos] == [("Beginning", 0, 4), ("Ending", 8, 4)]
    fsa = by_key["FSA/1"]
    assert fsa.context == {"ref_segment": [1.5, 3.25]} and "1.5s and 3.25s" in fsa.question
    pss = by_key["PSS/0"]
    assert [(v.offset, v.duration) for v in pss.videos] == [(8, 3.5), (4, 2), (0.5, 2.5)]
    assert pss.context["segment_parts"] == {"1": [[0.0, 1.0], [2.0, 3.5]]}
    assert by_key["CCQA/0"].reference["scoring_points"] == ITEMS["CCQA"][0]["scoring_points"]
    assert by_key["MOC/0"].answer == "B "  # kept raw: only "B " matches officially


def test_uav_placeholders_and_hints_follow_the_official_scripts(tree):
    items, _ = load_crossvid(tree, tasks=["MSR", "MOC"])
    msr = next(i.episode for i in items if i.task == "MSR")
    # {B4} .. {A4} .. {A4}: B4 -> obj_1, A4 -> obj_3 (its last occurrence); braceless "A2" stays as written
    assert msr.question == "When obj_1 leaves view B, where is obj_3 relative to obj_3's lane and A2?"
    assert msr.options[0] == "A. left of obj_3"
    # track 10 shows from file 20 (view A) / 41 (view B); 64 of 80 files sampled; 640 px -> 360 px boxes
    assert msr.context["objects"] == [
        "obj_3 appears in 17th frame of view A with bbox [56, 28, 169, 187]",
        "obj_1 appears in 34th frame of view B with bbox [56, 28, 169, 187]",
    ]
    assert [v.path.endswith(f"5-{n}") for n, v in enumerate(msr.videos, 1)] == [True, True]
    assert msr.videos[0].duration == 8.0  # 80 frames at 10 frames per second


def test_linspace_indices_match_numpy():
    np = pytest.importorskip("numpy")
    for count in (1, 5, 64, 80, 1234):
        assert uav.sampled_indices(count) == np.linspace(0, count - 1, 64, dtype=int).tolist()


def test_missing_media_is_reported_before_the_run(tmp_path):
    tree = write_crossvid(tmp_path, media=False)
    items, _ = load_crossvid(tree)
    missing = missing_media(items)
    assert len(missing) == len(items)
    assert tree / "videos" / "behavior" / "b1.mp4" in missing["BU/0"]
    assert tree / "uav" / "frames" / "1" / "5-1" in missing["MSR/0"]


def test_malformed_items_are_named_not_raised(tmp_path):
    bad = {
        "NC": [{"id": 3, "question": "?", "videos": ["movie/x.mp4"]}, {"id": 3}, "junk"],
        "FSA": [
            {"id": 4, "video A": "a.mp4", "video B": "b.mp4", "ref_segment": [1, 2], "answer": [3], "duration": [9, 9]}
        ],
        "MSR": [{**ITEMS["MSR"][0], "id": 9, "options": ["A. {C9}"]}],
        "PEA": [{**ITEMS["PEA"][0], "begin": [5, 2, 0], "end": [5.9, 10, 8]}],
    }
    tree = write_crossvid(tmp_path, media=False, items=bad)
    items, problems = load_crossvid(tree, tasks=list(bad))
    errors = {i.key: i.error for i in items}
    assert "missing field 'duration'" in errors["NC/3"]
    assert "FSA/4" in errors["FSA/4"]
    assert "{C9}" in errors["MSR/9"]
    assert "clip 5..5.9 is empty" in errors["PEA/0"]
    assert [str(p) for p in problems] == [
        "NC id 3: duplicate id (kept the first)",
        "NC item #2: not an object with an 'id'",
    ]


@pytest.mark.skipif(not SAMPLE.is_dir(), reason="the real CrossVid sample lives outside the repository")
def test_every_real_sample_item_loads():
    items, problems = load_crossvid(SAMPLE.parent, qa_dir=SAMPLE)
    assert problems == [] and len(items) == 301
    assert [i.error for i in items if i.error] == []
    for item in items:
        if item.task in ("MSR", "MOC"):
            assert "{" not in item.episode.question
            assert ("obj_" in item.episode.question) == ("{" in item.raw["question"])
            assert all("{" not in option for option in item.episode.options)
