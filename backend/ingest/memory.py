"""Settings of glibc's malloc that keep an ingest's memory bounded (elsewhere, where there is no glibc, nothing)."""

from __future__ import annotations

import ctypes

M_MMAP_THRESHOLD, MMAP_THRESHOLD = -3, 256 << 10


def _glibc(function: str, *args: int) -> None:
    """Calls a function of glibc's malloc (elsewhere, where it has none, nothing)."""
    try:
        getattr(ctypes.CDLL(None), function)(*args)
    except (OSError, AttributeError):
        pass


def return_freed_blocks() -> None:
    """Blocks of 256 KiB and more (numpy arrays, long lists) are mapped on their own, so that freeing one returns
    it to the OS (mallopt). By default glibc raises that threshold up to 32 MiB each time such a block is freed,
    after which those blocks come from its heaps and stay there, scattered between live objects: a function_graph
    ingest's peak varied from 921 to 987 MiB (median 921, 4 runs), and with this 828-837 MiB, for ~0.3 s more CPU
    (1/40 of it); blkparse's 564 -> 526 MiB, no slower. A setting of the process: the same for every Store."""
    _glibc("mallopt", M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def trim_heap() -> None:
    """Returns the C heap's free memory to the OS (malloc_trim): without it the arenas of the parser and insert
    threads keep ~100 MB the derivation that follows could use."""
    _glibc("malloc_trim", 0)
