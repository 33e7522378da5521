"""Reading items for the option reader (`agentcvr/reader.py`): the scan teacher's looks at generated scripts.

The items are what the reader sees at inference: the scan teacher's looks (every video observed whole with the
question and options as the focus, movie videos listened to: the looks the master makes first) in the rule simulator,
written by `agentcvr.reading.evidence_text`. The teacher's own answer is not used; the labels come from the script.
With `evidence_looks` a share of the training items (drawn by a seeded coin per script) adds, after the scan, the
expert's looks at the evidence windows: the looks a master that learned where to look would add, so that the reader
learns to read them rather than be drowned by the scan around them. With `search` every item (held-out too) is the
scan followed by the search's turn (`agentcvr/policies/search.py`), the looks a reader behind `reader_looks=search`
reads.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

import torch
from pydantic import ValidationError
from torch import nn

from agentcvr.agent import Agent
from agentcvr.components import make_perception, make_policy
from agentcvr.interfaces import Limits
from agentcvr.policies.expert import evidence_calls
from agentcvr.policies.option_vote import option_texts
from agentcvr.policies.scan_teacher import ScanThen
from agentcvr.policies.search import search_calls
from agentcvr.policies.teaching import looks
from agentcvr.reader import Reader, ReadingItem
from agentcvr.reading import evidence_text, option_letters, seen_from
from agentcvr.script import Script
from agentcvr.spec import Spec, SpecMismatch, check_resume


def reading_items(
    scripts: Sequence[Script],
    limits: Limits,
    windows: int = 1,
    evidence_looks: float = 0.0,
    seed: int = 0,
    search: bool = False,
) -> list[ReadingItem]:
    """The scan teacher's looks at each script in the rule simulator (each video's first look cut into `windows`), as
    reading items (its answer is not used); with `search` each scan is followed by the search's turn (the looks of
    `reader_looks=search`); on a share `evidence_looks` of them (a coin seeded by `seed`) the scan is followed by the
    evidence windows instead."""
    if not 0.0 <= evidence_looks <= 1.0:
        raise ValueError(f"evidence_looks is a share of the items, between 0 and 1: got {evidence_looks}")
    table = {s.id: s for s in scripts}
    simulator = make_perception("sim", table, sampling="events")  # the shipped readers' items: every event a look spans
    then = limits.model_copy(update={"max_turns": limits.max_turns + 1})  # one more looking turn
    if search:
        scan = Agent(ScanThen(table, search_calls, windows=windows), simulator, then)
    else:
        scan = Agent(make_policy("scan", table, windows=windows), simulator, limits)
    evidence = Agent(ScanThen(table, evidence_calls(table), windows=windows), simulator, then)
    coin = random.Random(f"evidence-looks-{seed}")
    items = []
    for script in scripts:
        episode = script.episode
        agent = evidence if coin.random() < evidence_looks else scan
        _, messages = agent.converse(episode)
        seen = [seen_from(look.action, look.observation) for look in looks(messages, episode)]
        gold = set(script.answer if isinstance(script.answer, list) else [script.answer])
        labels = [int(letter in gold) for letter in option_letters(episode.options)]
        items.append(
            ReadingItem(
                episode.id, episode.task, episode.question, option_texts(episode.options), evidence_text(seen), labels
            )
        )
    return items


def write_items(items: Iterable[ReadingItem], path: Path) -> None:
    with path.open("w") as f:
        for item in items:
            f.write(json.dumps(asdict(item)) + "\n")


def read_items(path: Path) -> list[ReadingItem]:
    return [ReadingItem(**json.loads(line)) for line in path.open()]


def loss_of(scores: torch.Tensor, item: ReadingItem) -> torch.Tensor:
    """Cross-entropy over the options; a multi-select item (BU) a binary loss per option."""
    labels = torch.tensor([float(y) for y in item.labels])
    if item.multi:
        return nn.functional.binary_cross_entropy_with_logits(scores, labels)
    return nn.functional.cross_entropy(scores.unsqueeze(0), labels.argmax().unsqueeze(0))


def load_reader(folder: str | None) -> Reader | None:
    """The reader a run's `agent.reader` names, or None when it names none."""
    return None if folder in (None, "none") else Reader.load(folder)


class ReaderSpec(Spec):
    """What a reader fit computes with: its items (task kinds, scripts per kind, the training scripts' seed, which
    also shuffles and initializes) and its head (learning rate, width, sentence encoder). Its folder's items, vectors
    and checkpoint depend on all of them; `--examples` and `--eval-every` are not here: a resumed fit may change
    them."""

    tasks: list[str]
    train_per_task: int
    heldout_per_task: int
    seed: int
    lr: float
    width: int
    encoder: str
    windows: int = 1  # the looks read: each video's first look cut into this many windows (the scan teacher's)
    lexical: bool = False  # the head adds shared words to the sentence vectors (`agentcvr.reader.word_overlap`)
    evidence_looks: float = 0.0  # share of training items whose scan is followed by the evidence windows
    search_looks: bool = False  # every item's scan is followed by the search's turn (held-out items too)


def resume_folder(out: Path, spec: ReaderSpec) -> None:
    """Record `spec` in `out/settings.json`; a folder made under another spec is refused naming what differs
    (`agentcvr.spec.check_resume`, as every run resumes), and one whose settings.json is not a reader spec as unknown
    settings."""
    path = out / "settings.json"
    if path.exists():
        try:
            written = ReaderSpec.model_validate_json(path.read_text())
        except ValidationError as error:
            problem = error.errors()[0]
            raise SpecMismatch(
                f"{path} does not hold a reader spec ({'.'.join(map(str, problem['loc']))}: {problem['msg']}): the "
                "folder's settings are unknown, so this fit cannot resume it. Use another --out."
            ) from None
        check_resume(path, spec, [written])
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(spec.model_dump_json(indent=2) + "\n")
