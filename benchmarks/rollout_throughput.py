"""Rollout throughput of GRPO generation: episodes/s, turns/s and the simulator's share of the time.

One generation batch of the CI tiny preset (a 2-layer, 32-wide policy memorized on expert trajectories of two PI
episodes, G=4, 2 prompts, 4 turns, 256 completion tokens), timed through the trainer's own
`_generate_and_score_completions`. It runs against whichever code is first on PYTHONPATH, so the same file measures
main (TRL's tool loop over train/environment.py) and this branch (rollouts through the LangGraph agent):

    PYTHONPATH=/path/to/main python benchmarks/rollout_throughput.py --out base.json
    PYTHONPATH=$PWD python benchmarks/rollout_throughput.py --baseline base.json

With `--baseline`, it prints the ratio of each figure to the baseline's.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import torch

STEPS = 60  # full-batch SFT steps that memorize the two trajectories (as tests/train/conftest.py)


class TimedPerception:
    """The simulator with the time spent in it counted."""

    def __init__(self, inner):
        self.inner, self.seconds = inner, 0.0

    def observe(self, episode, action):
        return self._timed(self.inner.observe, episode, action)

    def listen(self, episode, action):
        return self._timed(self.inner.listen, episode, action)

    def _timed(self, fn, episode, action):
        started = time.perf_counter()
        try:
            return fn(episode, action)
        finally:
            self.seconds += time.perf_counter() - started


def tool_schemas() -> list[dict]:
    # (ask for train.rollout, not train.environment: an editable install can resolve a module deleted here from main)
    try:  # one loop: the action models' schemas
        import train.rollout  # noqa: F401
        from agentcvr.actions import tool_schemas as schemas
    except ImportError:  # main: the environment's docstring schemas
        from train.environment import tool_schemas as schemas
    return schemas()


def warm_start(folder: Path):
    from agentcvr.interfaces import Limits
    from agentcvr.policies.expert import ExpertPolicy
    from scripts_gen.generate import generate
    from simulator.script_sim import ScriptSimulator
    from train.config import TrainConfig
    from train.pipeline import save_policy
    from train.sft import _collate, assistant_loss, encode
    from train.tiny_model import build_tiny_model
    from train.tokenizer import boilerplate, render_with_template, train_tokenizer
    from train.trajectories import teacher_conversations

    torch.manual_seed(0)
    limits = Limits(max_turns=4, max_observation_chars=200)
    scripts = generate("PI", 2, seed=0)
    table = {s.id: s for s in scripts}
    conversations, _ = teacher_conversations(scripts, ExpertPolicy(table), ScriptSimulator(table), limits)
    texts = render_with_template(conversations, tool_schemas())
    tokenizer = train_tokenizer(texts * 4, vocab_size=1024, fixed=boilerplate(tool_schemas()))
    cfg = TrainConfig().model.model_copy(
        update={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "max_position_embeddings": 1024}
    )
    model = build_tiny_model(cfg, tokenizer)
    batch = _collate([encode(tokenizer, t) for t in texts], tokenizer.pad_token_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(STEPS):
        loss, _ = assistant_loss(model, *batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    save_policy(model, tokenizer, folder)
    return scripts, limits


def measure(batches: int, seed: int = 0) -> dict:
    from datasets import Dataset

    from agentcvr.components import make_training_perception
    from train.config import TrainConfig
    from train.grpo import build_trainer
    from train.tokenizer import load_tokenizer
    from train.trajectories import episodes_by_id, prompt_rows

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "warm"
        scripts, limits = warm_start(folder)
        agent = {"max_turns": limits.max_turns, "max_observation_chars": limits.max_observation_chars}
        grpo = {"num_generations": 4, "prompts_per_step": 2, "max_completion_length": 256, "temperature": 0.7}
        cfg = TrainConfig.model_validate({"agent": agent, "grpo": {**grpo, "report_to": [], "beta": 0.0}})
        table = {s.id: s for s in scripts}
        perception = TimedPerception(make_training_perception(cfg, table))  # what train-sim wires
        rows = prompt_rows(scripts, limits)
        trainer = build_trainer(
            cfg,
            str(folder),
            load_tokenizer(str(folder)),
            Dataset.from_list(rows),
            episodes_by_id(table),
            perception,
            Path(tmp) / "out",
            Path(tmp) / "tb",
        )
        trainer.model.train()  # as inside trainer.train(): metrics go to "train"
        random.seed(seed)
        torch.manual_seed(seed)
        episodes, turns, tokens, seconds = 0, 0.0, 0.0, 0.0
        for _ in range(batches):
            inputs = [dict(row) for row in rows for _ in range(cfg.grpo.num_generations)]
            started = time.perf_counter()
            trainer._generate_and_score_completions(inputs)
            seconds += time.perf_counter() - started
            episodes += len(inputs)
            turns += trainer._metrics["train"]["episode/turns"][-1] * len(inputs)
            tokens += trainer._metrics["train"]["completions/mean_length"][-1] * len(inputs)  # sampled tokens only
    return {
        "episodes": episodes,
        "turns": turns,
        "seconds": seconds,
        "episodes_per_s": episodes / seconds,
        "turns_per_s": turns / seconds,
        "sampled_tokens_per_s": tokens / seconds,
        "tool_calls_per_episode": trainer._metrics["train"]["episode/tool_calls"][-1],
        "simulator_share": perception.seconds / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=3, help="Generation batches of 8 episodes to time.")
    parser.add_argument("--seed", type=int, default=0, help="Sampling seed of the rollouts.")
    parser.add_argument("--out", type=Path, help="Write the figures here (JSON).")
    parser.add_argument("--baseline", type=Path, help="Figures of a baseline run (JSON) to print ratios against.")
    args = parser.parse_args()
    figures = measure(args.batches, args.seed)
    print(json.dumps(figures, indent=1))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    if args.baseline:
        base = json.loads(args.baseline.read_text())
        for key in ("episodes_per_s", "turns_per_s", "sampled_tokens_per_s", "simulator_share"):
            print(f"{key}: {figures[key]:.4g} vs baseline {base[key]:.4g} (ratio {figures[key] / base[key]:.2f})")


if __name__ == "__main__":
    main()
