"""OmniJigsaw: task generation from a real generated script, orchestrations in the simulator, Eq. 6-7 by hand."""

from __future__ import annotations

import pytest

from agentcvr.actions import Listen, Observe
from agentcvr.script import Event, Script, VideoScript
from agentcvr.tasks import get_task
from agentcvr.trace import EpisodeResult
from scripts_gen.generate import generate
from simulator.jigsaw_sim import MASKED_AUDIO, MASKED_VISUAL, OrchestratedSimulator
from simulator.script_sim import ScriptSimulator
from train.methods.jigsaw import JigsawReward, jigsaw_reward, jigsaw_script, r_cont, r_pos, repetition_penalty


def story() -> Script:
    """A 40 s video, one event per 10 s; the last two speak."""
    events = [
        Event(start=0, end=10, visual="a man enters the kitchen"),
        Event(start=10, end=20, visual="he chops onions"),
        Event(start=20, end=30, visual="he fries the onions", speech="now the onions go in"),
        Event(start=30, end=40, visual="he serves the dish", speech="dinner is ready"),
    ]
    return Script(id="s", task="NC", question="q", options=["A", "B"], answer="A",
                  videos=[VideoScript(index=1, duration=40, events=events)])  # fmt: skip


def test_clips_are_trimmed_shuffled_and_the_answer_restores_time_order():
    puzzle = jigsaw_script(story(), n_clips=4, trim=0.1, seed=3)
    assert puzzle.task == "PSS" and len(puzzle.videos) == 4
    assert all(v.duration == 8.0 for v in puzzle.videos)  # 10 s clips minus 1 s at each border
    order = [int(x) for x in puzzle.answer.split("->")]
    assert order != [1, 2, 3, 4]  # shuffled
    offsets = [puzzle.videos[j - 1].offset for j in order]  # shown clips listed by the answer run forward in time
    assert offsets == [1.0, 11.0, 21.0, 31.0]
    assert puzzle.videos[order[1] - 1].events[0].visual == "he chops onions"
    assert puzzle.videos[order[1] - 1].events[0].start == 0 and puzzle.videos[order[1] - 1].events[0].end == 8.0
    assert get_task("PSS").reward(puzzle.answer, puzzle.episode) == 1.0  # the registry scores it as PSS


def test_any_generated_script_makes_a_jigsaw_the_simulator_answers():
    source = generate("NC", 1, seed=0)[0]
    puzzle = jigsaw_script(source, n_clips=3, seed=1)
    sim = ScriptSimulator({puzzle.id: puzzle})
    episode = puzzle.episode
    text = sim.observe(episode, Observe(video=1, start=0, end=episode.videos[0].duration))
    assert text and "->" not in episode.question and "offset" not in episode.model_dump_json(include={"question"})


@pytest.mark.parametrize(
    ("mode", "video", "sees", "hears"),
    [
        ("JMI", 1, True, True),  # both modalities everywhere
        ("SMS", 1, True, False),  # dominant modality V (2 of 4 events speak: not a majority)
        ("CMM", None, None, None),  # per clip: silent clips keep V only, spoken ones keep both
    ],
)
def test_orchestrations_mask_modalities(mode, video, sees, hears):
    puzzle = jigsaw_script(story(), n_clips=4, trim=0.1, mode=mode, seed=3)
    sim = OrchestratedSimulator(ScriptSimulator({puzzle.id: puzzle}))
    episode = puzzle.episode
    order = [int(x) for x in puzzle.answer.split("->")]
    checks = [(video, sees, hears)] if video else [(order[0], True, False), (order[3], True, True)]
    for v, see, hear in checks:
        seen = sim.observe(episode, Observe(video=v, start=0, end=8))
        heard = sim.listen(episode, Listen(video=v, start=0, end=8))
        assert (seen != MASKED_VISUAL) is see and (heard != MASKED_AUDIO) is hear


def test_position_and_continuity_accuracy_eq_7():
    truth = [1, 2, 3, 4]
    assert r_pos([1, 2, 4, 3], truth) == 0.5  # positions 1, 2 right
    assert r_cont([1, 2, 4, 3], truth) == 1 / 3  # pairs (1,2) right; (2,4), (4,3) wrong
    assert r_cont([2, 3, 4, 1], truth) == 0.0  # pairs compared at the same position, as Eq. 7 reads


def test_reward_eq_6_discount_format_and_repetition():
    assert jigsaw_reward("1->2->3->4", "1->2->3->4") == pytest.approx(0.2 + 1.0)  # perfect: lambda = 1
    # 1->2->4->3: R_fmt .2 + 0.2 x (0.5 x .5 + 0.5 x 1/3) = .2 + .0833
    assert jigsaw_reward("1->2->4->3", "1->2->3->4") == pytest.approx(0.2 + 0.2 * (0.25 + 1 / 6))
    # 1->2->2->3 is no permutation: no R_fmt; R_pos .5, R_cont 1/3 (only (1,2)) -> 0.2 x (.25 + 1/6)
    assert jigsaw_reward("1->2->2->3", "1->2->3->4") == pytest.approx(0.2 * (0.25 + 1 / 6))
    assert jigsaw_reward(None, "1->2") == 0.0
    loop = " ".join(["clip one comes before clip two"] * 20)  # each 20-gram of the loop occurs ~4-5 times
    assert repetition_penalty(loop) == -0.5 and repetition_penalty("a b c " * 3) == 0.0
    assert jigsaw_reward("1->2", "1->2", text=loop) == pytest.approx(-0.5 + 0.2 + 1.0)


def test_the_repetition_check_reads_only_the_policys_own_turns():
    """TRL's decoded completion also holds the tool output (env_mask 0), which the policy did not write: asked about
    one clip with four different focuses, a simulator may answer four times alike. R_rep must look at the sampled
    text only, and still catch a policy that loops."""
    puzzle = jigsaw_script(story(), n_clips=4, trim=0.1, seed=3)
    episode = puzzle.episode
    solved = EpisodeResult(episode_id=episode.id, task="PSS", answer=puzzle.answer)
    focuses = ("who is there", "what is cut", "which room", "what happens first")
    calls = [
        f'<tool_call>{{"name": "observe", "arguments": {{"video": 1, "focus": "{f}"}}}}</tool_call>' for f in focuses
    ]
    turns = [*calls, f'<tool_call>{{"name": "answer", "arguments": {{"answer": "{puzzle.answer}"}}}}</tool_call>']
    seen = "[0.0s - 8.0s] A man in a grey apron stands at a wooden counter in a small bright kitchen and chops onions."
    tool_output = f"<|im_end|>\n<|im_start|>user\n<tool_response>\n{seen}\n</tool_response><|im_end|>\n"
    decoded = "".join(call + tool_output for call in calls) + turns[-1]  # what TRL hands reward functions
    assert repetition_penalty(decoded) == -0.5  # the tool's answer repeats 4 times
    reward = JigsawReward()
    kept = reward([[{"role": "assistant", "content": decoded}]], [solved], [episode], sampled_text=["\n".join(turns)])
    assert kept == [pytest.approx(0.2 + 1.0)]  # no penalty: the policy never repeated itself

    looping = "\n".join([" ".join(["clip one comes before clip two"] * 20), turns[-1]])
    plain = [{"role": "assistant", "content": turns[-1]}]
    assert repetition_penalty(turns[-1]) == 0.0
    assert reward([plain], [solved], [episode], sampled_text=[looping]) == [pytest.approx(-0.5 + 0.2 + 1.0)]

    other = story().episode  # not a jigsaw episode: TRL leaves it out of this reward
    assert reward([plain], [solved], [other], sampled_text=[turns[-1]]) == [None]
