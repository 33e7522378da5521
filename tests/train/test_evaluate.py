"""Held-out evaluation: the real loop on scripts, with the evidence-seen split that tells looking from reading."""

from __future__ import annotations

from agentcvr.interfaces import Limits
from agentcvr.policies.expert import ExpertPolicy
from agentcvr.policies.random_policy import RandomPolicy
from scripts_gen.generate import generate
from simulator.script_sim import ScriptSimulator
from train.evaluate import comparison_table, evaluate


def test_expert_sees_all_evidence_and_a_random_policy_mostly_does_not():
    scripts = [s for task in ("NC", "PEA", "MSR") for s in generate(task, 8, seed=77)]
    table = {s.id: s for s in scripts}
    simulator, limits = ScriptSimulator(table), Limits(max_turns=6)
    expert = evaluate(ExpertPolicy(table), scripts, simulator, limits, batch_size=1)
    random = evaluate(RandomPolicy(seed=3), scripts, simulator, limits, batch_size=1)
    assert expert["overall"]["evidence_seen"] == 1.0 and expert["overall"]["success_when_seen"] == 1.0
    assert expert["overall"]["success"] == 1.0 and set(expert["tasks"]) == {"NC", "PEA", "MSR"}
    assert random["overall"]["evidence_seen"] < 0.5
    lines = comparison_table({"expert": expert, "random": random}).splitlines()
    assert lines[0].split()[:5] == ["task", "expert", "success", "turns", "calls"] and "seen" in lines[0]
    assert lines[-1].startswith("overall") and "100%" in lines[-1]


def test_teacher_looks_hands_the_evidence_to_the_policy_that_answers():
    """With the expert making the calls, a policy that answers at random sees every fact and still scores chance:
    the probe separates reading from looking."""
    scripts = [s for task in ("NC", "PEA") for s in generate(task, 10, seed=78)]
    table = {s.id: s for s in scripts}
    simulator, limits = ScriptSimulator(table), Limits(max_turns=6)
    probe = evaluate(
        RandomPolicy(seed=4, max_calls=1), scripts, simulator, limits, batch_size=1, teacher_looks=ExpertPolicy(table)
    )
    assert probe["overall"]["evidence_seen"] == 1.0
    assert probe["overall"]["success"] < 0.6
    reader = evaluate(ExpertPolicy(table), scripts, simulator, limits, batch_size=1, teacher_looks=ExpertPolicy(table))
    assert reader["overall"]["success"] == 1.0


def test_a_batched_policy_serves_the_runners_threads_in_shared_batches(warm_start):
    """HFPolicy has act_batch: each episode runs in its own runner thread and their turns meet in one batch."""
    import threading

    from agentcvr.policies.hf_policy import HFPolicy

    folder, scripts, limits = warm_start
    table = {s.id: s for s in scripts}
    policy = HFPolicy(folder, max_new_tokens=64)
    sizes, act_batch = [], policy.act_batch
    policy.act_batch = lambda conversations: sizes.append(len(conversations)) or act_batch(conversations)
    threads_before = set(threading.enumerate())  # earlier tests' threads may end meanwhile: compare by identity
    report = evaluate(policy, scripts * 2, ScriptSimulator(table), limits, batch_size=4)
    assert report["overall"]["episodes"] == 4 and report["overall"]["turns"] >= 1
    assert max(sizes) > 1  # episodes' turns were generated together
    assert set(threading.enumerate()) <= threads_before  # the batching thread and the workers are gone


def test_a_reader_keeps_the_policy_batched(warm_start):
    """With a reader (agent.reader), the reader wraps the batched policy: the turns still meet in shared batches
    (wrapped beforehand, the policy lost act_batch and ran one episode at a time), and the choice answers are the
    reader's."""
    from agentcvr.policies.hf_policy import HFPolicy

    folder, scripts, limits = warm_start
    table = {s.id: s for s in scripts}
    policy = HFPolicy(folder, max_new_tokens=64)
    sizes, act_batch = [], policy.act_batch
    policy.act_batch = lambda conversations: sizes.append(len(conversations)) or act_batch(conversations)

    class Gold:
        """Answers every choice task right: what the master's answer turn becomes."""

        asked = 0

        def answer(self, episode, seen):
            Gold.asked += 1
            return table[episode.id].answer

    report = evaluate(policy, scripts * 2, ScriptSimulator(table), limits, batch_size=4, reader=Gold())
    assert max(sizes) > 1
    assert Gold.asked >= 1
    assert report["overall"]["episodes"] == 4
