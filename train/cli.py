"""The `agentcvr train-sim` command (registered by agentcvr.cli); heavy imports happen inside the function.

agentcvr train-sim --preset cpu-tiny
agentcvr train-sim --preset cpu-tiny --out runs/tiny --resume
agentcvr train-sim --preset gpu-qwen3-8b -o grpo.max_steps=200 -o simulator.url=http://sim:8000/v1
agentcvr train-sim --preset cpu-tiny --method tas --method care -o methods.tas.variant=linear-decay
"""

from __future__ import annotations

from pathlib import Path

import typer


def train_sim(
    preset: str = typer.Option("cpu-tiny", help="A preset in train/presets/ (cpu-tiny, gpu-qwen3-4b, ...) or a YAML."),
    overrides: list[str] = typer.Option(
        [], "--override", "-o", help="key=value on the preset, e.g. -o grpo.max_steps=20 -o data.tasks=[PI,MOC]"
    ),
    methods: list[str] = typer.Option(
        [],
        "--method",
        "-m",
        help="Switch on a companion paper's method (repeatable): tas, replay (AVATAR), care (GRPO-CARE), jigsaw "
        "(OmniJigsaw pretraining). Same as -o methods.<name>.enabled=true; tune with -o methods.tas.lam=0.5, "
        "-o methods.replay.hints=template etc.",
    ),
    resume: bool = typer.Option(False, help="Continue the run in --out from its last complete stage/checkpoint."),
    out: Path = typer.Option(None, help="Run folder (default runs/<preset>)."),
) -> None:
    """Warm-start a policy on expert trajectories, then train it with multi-turn GRPO in the script simulator."""
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models on 2 shared cores: threads only add contention
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from agentcvr.memory import fix_mmap_threshold

    if not fix_mmap_threshold():  # before torch fills the heap: rollouts free caches of a new size every turn
        typer.echo("not glibc: the mmap threshold is left as it is (a long CPU run's memory may creep)", err=True)
    import torch

    from agentcvr.spec import SpecMismatch
    from train.config import load_config
    from train.pipeline import run_train_sim

    if os.environ["OMP_NUM_THREADS"] == "1":
        torch.set_num_threads(1)
    known = ("tas", "replay", "care", "jigsaw")
    for name in methods:
        if name not in known:
            raise typer.BadParameter(f"unknown method {name!r}: choose from {', '.join(known)}", param_hint="--method")
    cfg = load_config(preset, [*overrides, *(f"methods.{name}.enabled=true" for name in methods)])
    try:
        run_train_sim(cfg, out or Path("runs") / cfg.name, resume=resume)
    except SpecMismatch as error:
        raise typer.BadParameter(str(error), param_hint="--resume") from None


def merge_checkpoint(
    checkpoint: Path = typer.Argument(..., help="A LoRA run's GRPO checkpoint: RUN/grpo/checkpoint-N."),
    out: Path = typer.Option(None, help="Where the merged policy goes (default RUN/merged-N)."),
) -> None:
    """Merge a GRPO checkpoint's adapter into its run's base: a policy folder that evaluation, pack-master and the
    plan benchmarks read like a warm start (TRL's checkpoints hold the adapter alone)."""
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from train.merge import merge_checkpoint as merge

    try:
        folder = merge(checkpoint, out)
    except (FileNotFoundError, FileExistsError, ValueError) as error:
        hint = "--out" if isinstance(error, FileExistsError) else "CHECKPOINT"
        raise typer.BadParameter(str(error), param_hint=hint) from None
    typer.echo(f"merged {checkpoint} into {folder}")


def train_reader(
    out: Path = typer.Option(
        Path("runs/reader"), help="Run folder: items, curve.jsonl, curve.png, checkpoint.pt, reader/."
    ),
    tasks: str = typer.Option("BU,NC,CC,PEA,PI,MSR,MOC", help="Choice task kinds to read (comma-separated)."),
    train_per_task: int = typer.Option(800, help="Training scripts per task kind (generator seed --seed)."),
    heldout_per_task: int = typer.Option(100, help="Held-out scripts per task kind (generator seed 10000)."),
    examples: int = typer.Option(16800, help="Training examples to see in all (items are revisited when fewer)."),
    eval_every: int = typer.Option(1400, help="Examples between held-out evaluations (and checkpoints)."),
    seed: int = typer.Option(0, help="Generator seed of the training scripts; also shuffles and initializes."),
    lr: float = typer.Option(1e-3, help="Adam learning rate of the reader's head."),
    width: int = typer.Option(128, help="Width of the head's projections of the sentence vectors."),
    threads: int = typer.Option(1, help="torch threads (1 is fastest on 2 busy cores)."),
    windows: int = typer.Option(
        1,
        min=1,
        max=12,
        help="Cut each video's first look into this many windows (1: whole, the shipped scan-v1); the reader then "
        "reads such looks, and its folder says so, so a scan before it cuts its looks the same way.",
    ),
    lexical: bool = typer.Option(
        True,
        help="Add the words a line shares with the question and each option, weighed by rarity, to the sentence "
        "vectors' relevance and support (scan-v2; --no-lexical: scan-v1's head).",
    ),
    evidence_looks: float = typer.Option(
        0.0,
        min=0.0,
        max=1.0,
        help="Share of the training items whose scan is followed by the expert's looks at the evidence windows (the "
        "looks a master that learned where to look adds); held-out items stay the scan's.",
    ),
    search_looks: bool = typer.Option(
        False,
        help="Follow every item's scan (held-out items too) with the search's turn: the looks `reader_looks=search` "
        "makes (PEA's steps zoomed on, NC's videos in windows).",
    ),
) -> None:
    """Train the option reader (a head over frozen all-MiniLM-L6-v2 sentence vectors) on the scan teacher's looks;
    resumes from --out.

    The reader scores each option of a choice question against the observations; `agentcvr run --reader
    OUT/reader` makes any master's choice-task answers the reader's. Prints and plots the held-out curve against
    chance and the majority letter. Generating the default items takes about 8 minutes, the fit about 5."""
    import os

    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    import torch

    from agentcvr.interfaces import Limits
    from agentcvr.models import READER_BASE
    from agentcvr.reading import CHOICE_TASKS
    from agentcvr.spec import SpecMismatch
    from scripts_gen.generate import generate_one
    from train.config import DataConfig
    from train.reader import ReaderSpec, read_items, reading_items, resume_folder, write_items
    from train.reader_fit import ReaderRun, fit_reader, plot_curve

    torch.set_num_threads(threads)
    heldout_seed = DataConfig().heldout_seed  # the held-out seed train-sim evaluates on
    kinds = [t.strip() for t in tasks.split(",") if t.strip()]
    unknown = [t for t in kinds if t not in CHOICE_TASKS]
    if unknown or not kinds:
        raise typer.BadParameter(
            f"not choice task kinds: {unknown}; choose from {sorted(CHOICE_TASKS)}", param_hint="--tasks"
        )
    if seed == heldout_seed:
        raise typer.BadParameter(f"seed {heldout_seed} generates the held-out scripts", param_hint="--seed")
    spec = ReaderSpec(
        tasks=kinds,
        train_per_task=train_per_task,
        heldout_per_task=heldout_per_task,
        seed=seed,
        lr=lr,
        width=width,
        encoder=READER_BASE,
        windows=windows,
        lexical=lexical,
        evidence_looks=evidence_looks,
        search_looks=search_looks,
    )
    try:
        resume_folder(out, spec)  # refused, naming what differs, when the folder was made under other settings
    except SpecMismatch as error:
        raise typer.BadParameter(str(error), param_hint="--out") from None
    limits = Limits(max_turns=4)
    pools = {}
    for name, count, pool_seed in (("train", train_per_task, seed), ("heldout", heldout_per_task, heldout_seed)):
        path = out / f"{name}.jsonl"
        if not path.exists():
            typer.echo(f"generating {name} items: {count} per kind of {', '.join(kinds)} (seed {pool_seed})")
            scripts = [generate_one(t, i, pool_seed) for t in kinds for i in range(count)]
            share = evidence_looks if name == "train" else 0.0  # held out: the scan's looks, as the default reads
            items = reading_items(scripts, limits, windows, share, seed, search=search_looks)
            write_items(items, path.with_suffix(".tmp"))
            path.with_suffix(".tmp").replace(path)
        pools[name] = read_items(path)
    # the fit's settings are the spec's
    fit = spec.model_dump(include={"encoder", "seed", "lr", "width", "windows", "lexical"})
    run = ReaderRun(out=out, examples=examples, eval_every=eval_every, **fit)
    fit_reader(run, pools["train"], pools["heldout"])
    typer.echo(f"curve: {plot_curve(out / 'curve.jsonl', out / 'curve.png')}; reader: {out / 'reader'}")
