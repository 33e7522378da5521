"""The option reader: a small trained head that scores each option of a choice question against the master's
observations, over frozen sentence vectors.

Nothing small learned to read here end to end: SmolLM2-135M stayed at chance (letters or yes/no), and so did
all-MiniLM-L6-v2 fine-tuned over a 512-token concatenation of question, options and observations (`docs/reader.md`).
What does learn, in minutes on one core, is to keep the encoder frozen and train only how sentences are compared:
every observed sentence (`agentcvr.reading.evidence_lines`, each with its video, seen or heard, and its time), the
question and each option become all-MiniLM-L6-v2 vectors (`agentcvr/sentences.py`), and the head learns

- how much each sentence bears on the question (`relevance`), and so each video's strength;
- how well each sentence supports each option, read with the question (`support`);
- per task kind, how to weigh the option features below into its score.

An option's features: its best-supporting sentence, its support weighed by relevance, its support near the moment
the question points at (two views at the same time), for an option naming videos their strength against the
others', and for a count the gap between the number and the relevant sentences counted softly. A learned sign read
from the question turns "which video does NOT ..." around. Options are scored one by one with no slot or letter
input, so no letter prior can pay. Trained by `agentcvr train-reader` (`train/reader_fit.py`).

Sentence vectors hardly tell `obj_5` from `obj_2`, or "bottom left" from "bottom right", which is what a multi-view
question turns on. A `lexical` head (readers from `scan-v2` on) adds to relevance and support the words a line shares
with the question and with each option, each weighed by how rare it is among the item's lines (`word_overlap`), with
two learned scales.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from agentcvr.episode import Episode
from agentcvr.matching import contrasts, count_across_views, matching_segment, place_at_moment
from agentcvr.models import ensure_model, file_sha256
from agentcvr.policies.option_vote import option_texts
from agentcvr.reading import (
    CHOICE_TASKS,
    MULTI_SELECT_TASKS,
    Seen,
    evidence_lines,
    evidence_text,
    option_letters,
    option_number,
    videos_named,
)
from agentcvr.sentences import SentenceEncoder
from agentcvr.text import words

HEAD_FILE = "head.pt"
CONFIG_FILE = "reader.json"
# Readers shipped in the package, by name (docs/reader.md): `scan-v2` is `agentcvr train-reader --out runs/reader
# --examples 42000`, `scan-v1` the same with `--no-lexical`, `scan-evidence-v1` with `--evidence-looks 0.5 --examples
# 70000` (the best point, 57,400).
SHIPPED = {name: Path(__file__).parent / "readers" / name for name in ("scan-v2", "scan-v1", "scan-evidence-v1")}
FEATURES = 11
READ_TASKS = sorted(CHOICE_TASKS)  # the task kinds a new head has weights for
MATCHED = {"FSA": matching_segment, "CCQA": contrasts}  # kinds answered by `agentcvr/matching.py`, untrained
# matched where the looks hold what the matcher needs (MSR: the asked moment; MOC: lines naming the object), else read
MATCHED_ELSE_READ = {"MSR": place_at_moment, "MOC": count_across_views}
TIME_SCALE = 10.0  # seconds: how far "near the moment" reaches before the learned scale


def word_overlap(lines: Sequence[str], texts: Sequence[str]) -> torch.Tensor:
    """[len(lines), len(texts)]: the words each line shares with each text, each weighed by its rarity among the
    lines (log(1 + lines / lines holding it)): a word every line has (`frame`) counts for little."""
    line_words = [words(line) for line in lines]
    counts = Counter(w for found in line_words for w in found)
    weight = {w: math.log(1 + len(lines) / c) for w, c in counts.items()}
    text_words = [words(text) for text in texts]
    return torch.tensor([[sum(weight[w] for w in mine & theirs) for theirs in text_words] for mine in line_words])


@dataclass(frozen=True)
class ReadingItem:
    """One question as the reader takes it; `labels[i]` is 1 where option i is (part of) the answer (empty at
    inference)."""

    id: str
    task: str
    question: str
    options: list[str]
    evidence: str
    labels: list[int]

    @property
    def multi(self) -> bool:
        return self.task in MULTI_SELECT_TASKS


@dataclass(frozen=True)
class Prepared:
    """A reading item as vectors: what the head takes."""

    task: str
    question: torch.Tensor  # [d]
    options: torch.Tensor  # [k, d]
    lines: torch.Tensor  # [n, d]
    videos: torch.Tensor  # [n] long: each line's video
    heard: torch.Tensor  # [n] 1.0 where the line was heard
    times: torch.Tensor  # [n] seconds
    named: tuple[frozenset[int], ...]  # the videos each option names (empty: a text option)
    numbers: tuple[float | None, ...]  # each option as a count, where it is one
    overlap: torch.Tensor  # [n, 1 + k] the words each line shares with the question, then with each option


def prepare(item: ReadingItem, encoder: SentenceEncoder) -> Prepared:
    lines = evidence_lines(item.evidence)
    vectors = encoder.vectors([item.question, *item.options, *(line.text for line in lines)])
    k = len(item.options)
    return Prepared(
        task=item.task,
        question=vectors[0],
        options=vectors[1 : 1 + k],
        lines=vectors[1 + k :],
        videos=torch.tensor([line.video for line in lines], dtype=torch.long),
        heard=torch.tensor([float(line.heard) for line in lines]),
        times=torch.tensor([line.time for line in lines]),
        named=tuple(videos_named(option) for option in item.options),
        numbers=tuple(option_number(option) for option in item.options),
        overlap=word_overlap([line.text for line in lines], [item.question, *item.options]),
    )


class ReaderHead(nn.Module):
    """Option scores from a `Prepared` item; the only trained part of the reader."""

    def __init__(self, tasks: Sequence[str], dim: int = 384, width: int = 128, lexical: bool = False):
        super().__init__()
        self.tasks, self.width, self.lexical = list(tasks), width, lexical
        if lexical:  # how much a shared word adds to relevance (question) and to support (option)
            self.word_scale = nn.Parameter(torch.zeros(2))
        self.question_key, self.line_key = nn.Linear(dim, width), nn.Linear(dim, width)
        self.option_query, self.question_query, self.line_value = (nn.Linear(dim, width) for _ in range(3))
        self.negation = nn.Linear(dim, 1)  # the sign a question gives video strength ("does not include")
        self.counting = nn.Linear(dim, 2)  # the question's slope and threshold for counting relevant lines
        self.heard_bias = nn.Parameter(torch.zeros(1))
        self.time_scale = nn.Parameter(torch.zeros(1))  # log of the reach of "near in time", in TIME_SCALE units
        self.weights = nn.Embedding(len(self.tasks), FEATURES)
        nn.init.normal_(self.weights.weight, std=0.1)

    def forward(self, item: Prepared) -> torch.Tensor:
        k = item.options.shape[0]
        if item.lines.shape[0] == 0:
            return torch.zeros(k)  # nothing observed: no option is preferred
        scale = math.sqrt(self.width)
        relevance = self.line_key(item.lines) @ self.question_key(item.question) / scale + self.heard_bias * item.heard
        queries = self.option_query(item.options) + self.question_query(item.question)
        support = self.line_value(item.lines) @ queries.T / scale  # [n, k]
        if self.lexical:
            relevance = relevance + self.word_scale[0] * item.overlap[:, 0]
            support = support + self.word_scale[1] * item.overlap[:, 1:]
        attention = torch.softmax(relevance, 0)
        best = support.max(0).values
        joint = torch.logsumexp(support + relevance[:, None], 0)
        attended = attention @ support
        moment = (attention * item.times).sum()
        reach = TIME_SCALE * torch.exp(self.time_scale)
        near = torch.logsumexp(support - ((item.times - moment).abs() / reach)[:, None], 0)
        contrast, strength = self._video_features(item, relevance)
        sign = torch.tanh(self.negation(item.question))
        slope, threshold = self.counting(item.question)
        count = torch.sigmoid(relevance * torch.exp(slope) + threshold).sum()
        gap = torch.stack([-(count - n).abs() if n is not None else count.new_tensor(0.0) for n in item.numbers])
        features = torch.stack(
            [best, joint, attended, contrast, sign * contrast, gap, sign * best, sign * joint, strength, near,
             torch.ones(k)],
            -1,
        )  # fmt: skip
        return features @ self.weights(torch.tensor(self.tasks.index(item.task)))

    @staticmethod
    def _video_features(item: Prepared, relevance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per option naming videos: their mean strength minus the others' (contrast), and their mean strength."""
        count = max([int(item.videos.max()), *(max(n) for n in item.named if n)])
        zero = relevance.new_tensor(0.0)
        by_video = [
            torch.logsumexp(relevance[item.videos == v], 0) if bool((item.videos == v).any()) else zero
            for v in range(1, count + 1)
        ]
        contrast, strength = [], []
        for named in item.named:
            inside = [by_video[v - 1] for v in sorted(named)]
            outside = [by_video[v - 1] for v in range(1, count + 1) if v not in named]
            mean_in = torch.stack(inside).mean() if inside else zero
            mean_out = torch.stack(outside).mean() if outside else zero
            contrast.append(mean_in - mean_out if inside else zero)
            strength.append(mean_in)
        return torch.stack(contrast), torch.stack(strength)


def choose(scores: Sequence[float], multi: bool) -> list[int]:
    """Chosen option indices: the best one, or for multi-select every option scored above 0 (at least one)."""
    best = max(range(len(scores)), key=lambda i: scores[i])
    if not multi:
        return [best]
    return [i for i, s in enumerate(scores) if s > 0] or [best]


def reader_folder(name: str | Path) -> Path:
    """A shipped reader's folder by name (`scan-v2`), or the folder given."""
    return SHIPPED[name] if isinstance(name, str) and name in SHIPPED else Path(name)


class Reader:
    """A trained reader: `Reader.load(folder).answer(episode, seen)` -> the answer letters."""

    def __init__(self, encoder: SentenceEncoder, head: ReaderHead, encoder_name: str, windows: int = 1):
        self.encoder, self.head, self.encoder_name = encoder, head.eval(), encoder_name
        self.windows = windows  # the scan looks it was trained to read: each video's first look cut into this many
        self.matched_else_read = dict(MATCHED_ELSE_READ)  # a kind left out is read by the head alone

    @classmethod
    def load(cls, folder: Path, encoder: SentenceEncoder | None = None) -> Reader:
        """The reader saved in `folder` (or shipped under that name); its head is checked against the sha256 its
        config records, its encoder comes from the model registry (sha256-checked) unless given."""
        folder = reader_folder(folder)
        if not (folder / HEAD_FILE).is_file() or not (folder / CONFIG_FILE).is_file():
            known = ", ".join(SHIPPED)
            raise FileNotFoundError(
                f"not a reader folder (needs {HEAD_FILE} and {CONFIG_FILE}) nor a shipped reader ({known}): {folder}"
            )
        config = json.loads((folder / CONFIG_FILE).read_text())
        if (digest := file_sha256(folder / HEAD_FILE)) != (recorded := config.get("head_sha256")):
            raise ValueError(f"{folder / HEAD_FILE} is damaged: sha256 {digest}, its config says {recorded}")
        encoder = encoder or SentenceEncoder(ensure_model(config["encoder"], progress=False))
        head = ReaderHead(config["tasks"], encoder.width, config["width"], config.get("lexical", False))
        head.load_state_dict(torch.load(folder / HEAD_FILE, weights_only=True))
        return cls(encoder, head, config["encoder"], config.get("windows", 1))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.head.state_dict(), folder / HEAD_FILE)
        config = {
            "encoder": self.encoder_name,
            "width": self.head.width,
            "tasks": self.head.tasks,
            "head_sha256": file_sha256(folder / HEAD_FILE),
            "windows": self.windows,
            "lexical": self.head.lexical,
        }
        (folder / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")

    def scores(self, episode: Episode, seen: Sequence[Seen]) -> list[float]:
        item = ReadingItem(
            episode.id, episode.task, episode.question, option_texts(episode.options), evidence_text(seen), []
        )
        with torch.inference_mode():
            return self.head(prepare(item, self.encoder)).tolist()

    def answer(self, episode: Episode, seen: Sequence[Seen]) -> str | None:
        """The chosen options' letters, joined in label order (BU's official form), e.g. 'B' or 'AC'; for FSA and
        CCQA the answer matched from the observed sentences (`agentcvr/matching.py`, untrained), None when the looks
        hold nothing to match; for MSR the place matched at the asked moment and for MOC the count of distinct lines
        naming the object, where the looks hold them, else the head's."""
        if episode.task in MATCHED:
            return MATCHED[episode.task](episode, evidence_lines(evidence_text(seen)), self.encoder)
        if episode.task in self.matched_else_read and (
            matched := self.matched_else_read[episode.task](episode, evidence_lines(evidence_text(seen)))
        ):
            return matched
        letters = option_letters(episode.options)
        chosen = choose(self.scores(episode, seen), episode.task in MULTI_SELECT_TASKS)
        return "".join(sorted(letters[i] for i in chosen))
