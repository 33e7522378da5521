"""A small CrossVid tree in the official layout, with the real data's quirks: the tests' fixture and the CrossVid
harness benchmark's input.

    write_crossvid(tmp_path, media=True)  # QA/<TASK>.json, videos/..., uav/frames|bbox/{1,2}/

Quirks copied from the real items: a gold answer with a trailing space (MOC), a BU item with 3 videos beside 4-video
ones, a braceless placeholder left as text, a repeated placeholder (obj numbering gaps), duplicate option texts,
integer and decimal times side by side, a PSS segment of several sub-intervals.
Media: tiny real MP4s (ffmpeg testsrc, 12 s, 64x48) and frame folders of 80 small PNGs with boxes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

# The tracked objects of the one UAV recording that MSR and MOC both ask about.
UAV_OBJECTS = [
    {"id": 7, "label": "car"},
    {"id": 8, "label": "car"},
    {"id": 9, "label": "bus"},
    {"id": 10, "label": "car"},
    {"id": 11, "label": "person"},
]

OPTIONS = ["A. Video one.", "B. Video two.", "C. Video three.", "D. Video four."]
ITEMS: dict[str, list[dict]] = {
    "BU": [
        {
            "id": 0,
            "question": "Which videos show an animal eating?",
            "videos": ["behavior/b1.mp4", "behavior/b2.mp4", "behavior/b3.mp4", "behavior/b4.mp4"],
            "options": OPTIONS,
            "answer": ["A", "C"],
            "duration": [12.0, 12.0, 12.0, 12.0],
        },
        {
            "id": 1,
            "question": "Which video shows grooming?",
            "videos": ["behavior/b1.mp4", "behavior/b2.mp4", "behavior/b3.mp4"],
            "options": OPTIONS[:3],
            "answer": ["B"],
            "duration": [12, 12, 12],
        },
    ],
    "NC": [
        {
            "id": 0,
            "question": "Which two videos share a plot?",
            "options": ["A. Video1 and Video2", "B. Video2 and Video3", "C. Video3 and Video4", "D. Video1 and Video4"],
            "videos": ["movie/m1.mp4", "movie/m2.mp4", "movie/m3.mp4", "movie/m4.mp4"],
            "answer": "C",
            "duration": [12.0, 12.0, 12.0, 12.0],
        }
    ],
    "CC": [
        {
            "id": 0,
            "question": "Which video dries the potatoes?",
            "options": ["A. Press", "B. Sun", "C. Sieve", "D. Sieve"],
            "videos": ["cook/c1.mp4", "cook/c2.mp4", "cook/c3.mp4", "cook/c4.mp4"],
            "answer": "C",
            "duration": [12.0, 12.0, 12.0, 12.0],
        }
    ],
    "PEA": [
        {
            "id": 0,
            "question": "Which video has an unnecessary step?",
            "options": ["A. Video 1", "B. Video 2", "C. Video 3", "D. Video 2 again"],
            "answer": "A",
            "videos": ["assembly/a1.mp4", "assembly/a2.mp4", "assembly/a3.mp4"],
            "begin": [1.5, 2, 0],
            "end": [9.7, 10, 8],
            "duration": [12.0, 12.0, 12.0],
        }
    ],
    "PI": [
        {
            "id": 0,
            "options": [f"{c}. option {c}" for c in "ABCDEF"],
            "video": "movie/m1.mp4",
            "beginning": [0, 4],
            "ending": [8, 12.0],
            "answer": "E",
            "duration": 12.0,
        }
    ],
    "FSA": [
        {
            "id": 0,
            "video A": "cook/c1.mp4",
            "video B": "cook/c2.mp4",
            "ref_segment": [2, 5],
            "answer": [4, 8],
            "duration": [12.0, 12.0],
        },
        {
            "id": 1,
            "video A": "cook/c3.mp4",
            "video B": "cook/c4.mp4",
            "ref_segment": [1.5, 3.25],
            "answer": [6.5, 9],
            "duration": [12.0, 12.0],
        },
    ],
    "PSS": [
        {
            "id": 0,
            "video": "cook/c1.mp4",
            "segments": {"1": [[8, 9], [10, 11.5]], "2": [[4, 6]], "3": [[0.5, 3]]},
            "answer": "3->2->1",
            "duration": 12.0,
        }
    ],
    "MSR": [
        {
            "id": 0,
            "question": "When {B4} leaves view B, where is {A4} relative to {A4}'s lane and A2?",
            "options": ["A. left of {A4}", "B. right", "C. behind", "D. right"],
            "answer": "B",
            "objects": UAV_OBJECTS,
            "vid": 5,
        }
    ],
    "MOC": [
        {
            "id": 0,
            "question": "How many cars overtake {A1}?",
            "options": ["A. 0", "B. 1", "C. 2", "D. 3"],
            "answer": "B ",
            "objects": UAV_OBJECTS,
            "vid": 5,
        }
    ],
    "CCQA": [
        {
            "id": 0,
            "video A": "cook/c1.mp4",
            "video B": "cook/c2.mp4",
            "question": "How do the chefs differ in drying potatoes?",
            "answer": "Video A uses a sieve, video B a towel.",
            "scoring_points": ["Tool (sieve vs towel)", "Order of steps"],
            "duration": [12.0, 12.0],
        }
    ],
}


def write_crossvid(root: Path, media: bool = True, items: dict[str, list[dict]] | None = None) -> Path:
    """Write the tree under `root` (annotations always, media when asked) and return root."""
    qa = root / "QA"
    qa.mkdir(parents=True, exist_ok=True)
    for task, rows in (items or ITEMS).items():
        (qa / f"{task}.json").write_text(json.dumps(rows, indent=1))
    if media:
        write_media(root, items or ITEMS)
    return root


def tiny_video(path: Path, seconds: int = 12) -> Path:
    """A real MP4 (testsrc pattern, 10 fps, 64x48) made once per machine (in the temp folder) and copied."""
    cache = Path(tempfile.gettempdir()) / "agentcvr-sample-tree" / f"tiny-{seconds}.mp4"
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "ffmpeg",
                "-v",
                "error",
                "-y",
                "-f",
                "lavfi",
                "-i",
                f"testsrc=size=64x48:rate=10:duration={seconds}",
                "-pix_fmt",
                "yuv420p",
                str(cache.with_suffix(".part.mp4")),
            ],
            check=True,
        )
        cache.with_suffix(".part.mp4").replace(cache)  # whole or absent: another process may be reading it
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cache, path)
    return path


def write_media(root: Path, items: dict[str, list[dict]]) -> None:
    names = set()
    for rows in items.values():
        for raw in rows:
            names.update(raw.get("videos", []) + [raw[k] for k in ("video", "video A", "video B") if k in raw])
    for name in sorted(names):
        tiny_video(root / "videos" / name)
    vids = {raw["vid"] for task in ("MSR", "MOC") for raw in items.get(task, [])}
    for vid in vids:
        write_uav(root, vid)


def write_uav(root: Path, vid: int, frames: int = 80) -> None:
    """Two views of `frames` PNGs (640x480, so boxes get scaled to 360 px) and a box file per view.
    Track 10 (object 4) shows from file 20 on in view A and from file 41 on in view B; track 7 (object 1) from 0."""
    from PIL import Image

    for number in (1, 2):
        folder = root / "uav" / "frames" / str(number) / f"{vid}-{number}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(frames):
            Image.new("RGB", (640, 480), (i * 3 % 255, 80, 40 * number)).save(folder / f"{i:06d}.png")
        first = 20 if number == 1 else 41
        boxes = [
            {"id": 7, "bbox": {str(i): {"xtl": 10, "ytl": 20, "xbr": 110, "ybr": 121} for i in range(frames)}},
            {
                "id": 10,
                "bbox": {
                    str(i): ({"xtl": 100, "ytl": 50, "xbr": 301, "ybr": 333} if i >= first else None)
                    for i in range(frames)
                },
            },
        ]
        bbox = root / "uav" / "bbox" / str(number) / f"{vid}.json"
        bbox.parent.mkdir(parents=True, exist_ok=True)
        bbox.write_text(json.dumps(boxes))
