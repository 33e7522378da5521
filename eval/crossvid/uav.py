"""MSR/MOC placeholders and bounding-box hints, resolved the way the official MSR.py / MOC.py resolve them.

A question names objects as `{A4}` (view A, object 4 of the item's `objects`). The official scripts rename each to
`obj_n`, n = 1 + the position of the placeholder's *last* occurrence in the question's placeholder list, and add one
hint line per object: the first of the 64 frames sampled from that view (`linspace(0, n_files - 1, 64)` over the
sorted file names, duplicates kept) where its box exists, the box scaled to the 360-px frame with `int()`.

    >>> rename_map("{B4} passes {A4}; later {A4} stops")
    {'B4': 'obj_1', 'A4': 'obj_3'}
    >>> ordinal(1), ordinal(2), ordinal(3), ordinal(21)
    ('1st', '2nd', '3rd', '21th')
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

VIEWS = {"A": 1, "B": 2}
PLACEHOLDER = re.compile(r"\{(.*?)\}")  # the official extractor: any braces, lazily
FRAMES_PER_VIEW = 64  # 128 frames split over the two views
LONG_SIDE = 360


class PlaceholderError(ValueError):
    """A placeholder the official scripts cannot resolve (the item fails there too)."""


def placeholders(question: str) -> list[str]:
    """Every `{...}` in the question, in order, repeats included; each must be a view letter and object 1-5."""
    found = PLACEHOLDER.findall(question)
    for name in found:
        if not re.fullmatch(r"[AB][1-5]", name):
            raise PlaceholderError(f"placeholder {{{name}}} is not a view A/B and an object 1-5")
    return found


def rename_map(question: str) -> dict[str, str]:
    """Placeholder -> `obj_n`, n from its last occurrence (a dict overwritten in order, as the official loop does)."""
    names: dict[str, str] = {}
    for position, name in enumerate(placeholders(question)):
        names[name] = f"obj_{position + 1}"
    return names


def resolve_text(text: str, names: dict[str, str]) -> str:
    """The text with placeholders renamed, by `str.format` as the official scripts do (an unknown one raises)."""
    try:
        return text.format(**names)
    except (KeyError, IndexError, ValueError) as error:
        raise PlaceholderError(f"cannot resolve placeholders in {text!r}: {error!r}") from None


def ordinal(k: int) -> str:
    """The official scripts' ordinal: 1st, 2nd, 3rd, then 'th' for every other number (21th, 22th)."""
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def frame_folder(root: Path, vid: Any, view: str) -> Path:
    number = VIEWS[view]
    return root / "uav" / "frames" / str(number) / f"{vid}-{number}"


def bbox_file(root: Path, vid: Any, view: str) -> Path:
    return root / "uav" / "bbox" / str(VIEWS[view]) / f"{vid}.json"


def sampled_indices(count: int, n: int = FRAMES_PER_VIEW) -> list[int]:
    """`np.linspace(0, count - 1, n, dtype=int)` without numpy: truncation toward zero, duplicates kept."""
    if count <= 0:
        raise ValueError("empty frame folder")
    if n == 1:
        return [0]
    step = (count - 1) / (n - 1)
    return [int(i * step) for i in range(n - 1)] + [count - 1]


def hint_lines(root: Path, item: dict, names: dict[str, str]) -> list[str]:
    """One line per object, view A's first then view B's, in first-occurrence order (the official dict order)."""
    from PIL import Image

    lines = []
    for view in ("A", "B"):
        in_view = [name for name in dict.fromkeys(placeholders(item["question"])) if name[0] == view]
        if not in_view:
            continue
        tracks = json.loads(bbox_file(root, item["vid"], view).read_text())
        by_track: dict[Any, tuple[str, dict]] = {}
        for name in in_view:
            track_id = item["objects"][int(name[1]) - 1]["id"]
            entity = next((e for e in reversed(tracks) if e["id"] == track_id), None)  # the last match wins
            if entity is None:
                raise PlaceholderError(
                    f"object {track_id} ({name}) has no track in {bbox_file(root, item['vid'], view)}"
                )
            by_track[track_id] = (name, entity["bbox"])  # keyed by track id, as the official `obj_id` dict is
        files = sorted(p.name for p in frame_folder(root, item["vid"], view).iterdir())
        indices = sampled_indices(len(files))
        for name, boxes in by_track.values():
            hits = [k for k, index in enumerate(indices) if boxes is not None and boxes.get(str(index)) is not None]
            if not hits:
                raise PlaceholderError(f"{name} appears in none of the {len(indices)} sampled frames of view {view}")
            k = hits[0]
            box = boxes[str(indices[k])]
            with Image.open(frame_folder(root, item["vid"], view) / files[indices[k]]) as image:
                width, height = image.size
            scale = LONG_SIDE / max(width, height) if max(width, height) > LONG_SIDE else 1.0
            scaled = [int(box[key] * scale) for key in ("xtl", "ytl", "xbr", "ybr")]
            lines.append(f"{names[name]} appears in {ordinal(k + 1)} frame of view {view} with bbox {scaled}")
    return lines
