"""Servers and training fix glibc's mmap threshold, so freed buffers go back to the system (`agentcvr/memory.py`)."""

from __future__ import annotations

import platform

import pytest

from agentcvr.memory import fix_mmap_threshold


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_threshold_is_fixed_on_glibc():
    assert fix_mmap_threshold() is True  # mallopt found and accepted; the effect is the soak's to show
