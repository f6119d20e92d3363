"""Analyses: pure functions of the tables, run at ingest (derive) and at read time (queries).

DERIVE_SOURCE[format](con, source_id, report) -> (t_min_ns, t_max_ns) runs once a source's rows are in,
inside the ingest's transaction; DERIVE_ANALYSIS holds steps run once all sources of an analysis are in
(e.g. linking what one source shows to another), fn(con, analysis_id).
"""
from __future__ import annotations

from typing import Callable

from . import blk, stalls

SCHEMA = stalls.SCHEMA  # tables of derived results (the parsers' tables come from their Arrow schemas)
DERIVE_SOURCE: dict[str, Callable] = {"blkparse": blk.derive, "ftrace": stalls.span}
DERIVE_ANALYSIS: list[Callable] = [stalls.derive]  # waits of the ftrace sources, then chains (with block requests)
