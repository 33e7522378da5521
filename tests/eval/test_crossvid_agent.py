"""Agent mode on CrossVid items: the real agent loop and real perception (frames decoded, sent to a VLM behind a real
HTTP stub), a UAV view read from its folder of frames like a video, the whole trace kept in the record."""

import asyncio

import pytest

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.openai_stub import OpenAIStub
from agentcvr.perception.real import RealPerception
from agentcvr.policies.scripted import ScriptedPolicy
from agentcvr.spec import Component, RunSpec
from eval.agent_mode import AgentPredictor
from eval.crossvid.loader import load_crossvid
from eval.crossvid.records import read_predictions
from eval.crossvid.sample_tree import write_crossvid
from eval.runner import RunConfig, run_items

SPEC = RunSpec(policy=Component(name="scripted"), perception=Component(name="real"), limits=Limits())

pytestmark = pytest.mark.slow  # decodes the fixture videos through real perception


def call(name, **arguments):
    import json

    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_agent_reads_a_uav_frame_folder_as_a_video(tmp_path):
    tree = write_crossvid(tmp_path / "cv")
    items, _ = load_crossvid(tree, tasks=["MSR", "PEA"])
    policy = ScriptedPolicy(
        [
            call("observe", video=1, start=0.0, end=8.0, focus="where is obj_3", num_frames=4),
            call("answer", answer="B"),
            call("observe", video=2, start=0.0, end=8.0, focus="the wrong step", num_frames=3),
            call("answer", answer="A"),
        ]
    )
    out = tmp_path / "agent.jsonl"
    with OpenAIStub() as stub:
        stub.reply(content="A car drives up the left lane.")
        stub.reply(content="Someone attaches a wheel.")
        perception = RealPerception(visual="vlm", vlm={"base_url": stub.base_url, "model": "vlm"})
        predictor = AgentPredictor(Agent(policy, perception))
        try:
            records = asyncio.run(run_items(items, predictor, out, RunConfig(concurrency=1), spec=SPEC))
        finally:
            predictor.close()
            perception.close()
    assert [(r.key, r.status, r.output) for r in records] == [("MSR/0", "ok", "B"), ("PEA/0", "ok", "A")]
    steps = {r.key: r.trace["steps"] for r in read_predictions(out).values()}
    assert steps["MSR/0"][0]["observation"] == "A car drives up the left lane."  # from the folder's frames
    images = [p for p in stub.requests[0]["messages"][-1]["content"] if p.get("type") == "image_url"]
    assert len(images) == 4
    assert steps["PEA/0"][0]["observation"] == "Someone attaches a wheel."
