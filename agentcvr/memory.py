"""A long-lived process's memory stays flat: large buffers go back to the system when they are freed.

glibc serves an allocation above its mmap threshold (128 KiB at start) with a mapping of its own, unmapped on free;
but every such free raises the threshold to the freed size (up to 32 MiB), and from then on buffers of that size come
from the heap arenas, where freed ones leave holes that the next, slightly different size does not fill. Perception
allocates and frees a decoded frame array per observe (16 frames: ~3.5 MB): with new intervals every request (the
random master) the server's RSS crept +9 % over 800 requests after warm-up, and stayed flat with the threshold fixed
(`benchmarks/serve_soak.py --master random`, docs/service.md). GRPO's rollouts free key-value caches of a new size
every turn, and a CPU run's resident size crept to 12-18 GB within a few steps (docs/gpu_grpo.md, sessions 47-48).
Setting the threshold turns the adjustment off; the environment variable `MALLOC_MMAP_THRESHOLD_=131072` does the same
for any process. `serve` and `train-sim` set it at start.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc's mallopt parameter numbers (malloc.h)
MMAP_THRESHOLD = 128 << 10  # bytes: glibc's own starting value, kept fixed


def mallopt(parameter: int, value: int) -> bool:
    """glibc's `mallopt(parameter, value)` for this process; False where the C library is not glibc or refuses."""
    name = ctypes.util.find_library("c")
    try:
        function = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        return False
    if function is None:
        return False
    function.argtypes, function.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return function(parameter, value) == 1


def fix_mmap_threshold(size: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at `size` bytes for this process; False where the C library is not glibc."""
    return mallopt(M_MMAP_THRESHOLD, size)
