"""A folder of frame images read as a video (CrossVid's UAV views ship as `uav/frames/{1,2}/<vid>-<view>/`).

Frames are the folder's image files in sorted name order, played at `FOLDER_FPS` frames per second (the folders
carry no rate); frame i covers [i / fps, (i + 1) / fps). The content identity is the sorted names, sizes and
modification times, so a changed folder is decoded again.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

FOLDER_FPS = 10.0
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}


def is_frame_folder(path: str | os.PathLike) -> bool:
    return Path(path).is_dir()


def frame_files(path: str | os.PathLike) -> list[Path]:
    """The folder's image files in sorted name order."""
    return sorted(p for p in Path(path).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)


def folder_fingerprint(path: str | os.PathLike) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for file in frame_files(path):
        stat = file.stat()
        digest.update(f"{file.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()


def folder_size(path: str | os.PathLike) -> tuple[int, int, int]:
    """(frame count, width, height) from the first image's header."""
    from PIL import Image

    files = frame_files(path)
    if not files:
        return 0, 0, 0
    with Image.open(files[0]) as image:
        return len(files), image.width, image.height


def decode_folder(path: str, times: list[float], width: int, height: int) -> tuple[Any, list[float]]:
    """RGB frames (N, H, W, 3) at the given folder seconds, resized to (width, height), and their frame times."""
    import numpy as np
    from PIL import Image

    files = frame_files(path)
    indices = [min(len(files) - 1, max(0, int(t * FOLDER_FPS + 1e-6))) for t in times]
    images = []
    for index in indices:
        with Image.open(files[index]) as image:
            images.append(np.asarray(image.convert("RGB").resize((width, height), Image.BILINEAR)))
    return np.stack(images), [i / FOLDER_FPS for i in indices]
