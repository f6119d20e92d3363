"""Analyses: pure functions of the tables, run at ingest (derive) and at read time (queries).

DERIVE_SOURCE[format] lists steps fn(con, source_id, report) run once a source's rows are in (the one that
finds the time span returns it: (t_min_ns, t_max_ns)),
inside the ingest's transaction; DERIVE_ANALYSIS holds steps run once all sources of an analysis are in
(e.g. linking what one source shows to another), fn(con, analysis_id).
"""
from __future__ import annotations

import functools
from typing import Callable

from . import align, blk, stalls, timeline

SCHEMA = blk.SCHEMA + stalls.SCHEMA + timeline.SCHEMA  # tables of derived results (the parsers' tables come from their Arrow schemas)
# derived tables whose rows a derivation may commit before the analysis, keyed by source_id (as the parsers' staged
# rows): invisible until the sources are committed, deleted when the ingest fails
STAGED_TABLES: tuple[str, ...] = timeline.STAGED_TABLES
# fn(con): a file written by an older layout, rebuilt before SCHEMA runs
MIGRATIONS: list[Callable] = [stalls.migrate_calls, stalls.migrate]
DERIVE_SOURCE: dict[str, list[Callable]] = {"blkparse": [blk.derive], "ftrace": [stalls.span]}
DERIVE_ANALYSIS: list[Callable] = [
    align.derive,  # each source's clock offset: chains compare times across sources
    # waits of the ftrace sources, then chains (with block requests); the timeline's task slices and per-zoom
    # summaries draw the waits, not the chains: they are built (in a transaction of their own: STAGED_TABLES) while
    # the waits are inserted and the chains built (DuckDB's threads beside Python's); what of them needs only the
    # staged rows (task slices, long calls) is read while the waits are derived
    functools.partial(stalls.derive, early=timeline.prepare, meanwhile=timeline.summarize),
]
