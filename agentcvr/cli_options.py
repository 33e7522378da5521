"""The flags every "run many items" command shares (`run`, `eval crossvid`, `eval synth`), defined once so their
names, help and meaning cannot drift apart. Each command picks its own default (a remote VLM takes 64 items at
once, an embedded model one).

    def run(..., resume: Resume = False, retries: Retries = 3, timeout: Timeout = 900.0, concurrency: Concurrency = 1)
"""

from __future__ import annotations

from typing import Annotated

import typer

Resume = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue OUT: items finished under the same settings are kept, failed ones run again. Without it an "
        "OUT that already holds records is refused (as is one written under other settings, with or without it).",
    ),
]
Retries = Annotated[int, typer.Option(help="Tries per item before it is recorded as failed.", min=1)]
Timeout = Annotated[float, typer.Option(help="Seconds one try of one item may take (then it is stopped).", min=0.001)]
Concurrency = Annotated[
    int, typer.Option(help="Items in flight at once (a model loaded in this process answers one at a time).", min=1)
]
ComponentOption = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        help="A component option as policy.KEY=VALUE or perception.KEY=VALUE (repeatable; dotted keys reach nested "
        "options, e.g. -o perception.describer.ocr=false; the value is YAML). Unknown keys are refused by name.",
    ),
]
