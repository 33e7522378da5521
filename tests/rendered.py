"""The mark for tests that render the known-facts fixture (`scripts_gen.known_facts`) and need the apt tools."""

from __future__ import annotations

import shutil

import pytest

needs_tools = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("ffmpeg", "espeak-ng", "tesseract")),
    reason="needs the apt packages ffmpeg, espeak-ng, tesseract-ocr",
)
