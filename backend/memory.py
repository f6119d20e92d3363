"""Settings of glibc's malloc that keep an ingest's memory bounded (elsewhere, where there is no glibc, nothing)."""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 1 << 20
TRIM_THRESHOLD = 32 << 20


def _glibc(function: str, *args: int) -> None:
    """Calls a function of glibc's malloc (elsewhere, where it has none, nothing)."""
    try:
        getattr(ctypes.CDLL(None), function)(*args)
    except (OSError, AttributeError):
        pass


def return_freed_blocks() -> None:
    """Blocks of 1 MiB and more (numpy arrays, Arrow buffers, long lists) are mapped on their own, so that freeing one
    returns it to the OS (mallopt). By default glibc raises that threshold up to 32 MiB each time such a block is
    freed, after which those blocks come from its heaps and stay there, scattered between live objects: a
    function_graph ingest's peak varied from 921 to 987 MiB (median 921, 4 runs), with a fixed threshold 828-837 MiB.

    Not lower than 1 MiB: an upload's body passes through blocks of 256 KiB (the event loop's socket reads, the HTTP
    parser's pieces, the multipart parser's): with a threshold of 256 KiB each one was a fresh mapping, so each copy of
    the body faulted its pages in and each free unmapped them: more than half of the event loop's CPU time during an
    upload (perf), ~0.9 s of 4.8 s of the server's CPU for a 0.25 GiB blkparse upload. And the free memory at the top
    of a heap is kept up to 32 MiB (M_TRIM_THRESHOLD, 128 KiB by default once the other is set), so that those blocks,
    freed and taken again at the top of the heap, are not given back and faulted in again each time; trim_heap still
    gives everything back after staging. A setting of the process: the same for every Store."""
    _glibc("mallopt", M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    _glibc("mallopt", M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def trim_heap() -> None:
    """Returns the C heap's free memory to the OS (malloc_trim): without it the arenas of the parser and insert
    threads keep ~100 MB the derivation that follows could use."""
    _glibc("malloc_trim", 0)
