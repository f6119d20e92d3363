"""The threads that analyse uploads: as many as uploads run at once (Limits.max_uploads), each at a lower CPU
priority than the server's other threads (Limits.ingest_nice), so that on a busy server the reads of the pages
people look at keep their pace while uploads take longer. The threads an ingest starts (its parsers, inserters,
derive pool) inherit the priority; DuckDB's own worker threads, shared by reads and ingests, keep theirs.

Created with the app (backend/app.py) and shut down at the end of its lifespan."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor


def _lower_priority(nice: int) -> None:
    """Raises this thread's nice value by `nice` (Linux: a thread's priority is its own; raising needs no
    privilege, lowering again would, which is why ingests get their own threads)."""
    if nice:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
        except OSError:  # a platform without per-thread priorities: the same priority as reads
            pass


def ingest_pool(uploads: int, nice: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(
        uploads, thread_name_prefix="stallscope-ingest", initializer=_lower_priority, initargs=(nice,)
    )
