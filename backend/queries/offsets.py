"""The analysis' clock offsets (aligned time = a source's own time + its offset), read at each call: a PATCH moves
them. Part of the key of every kept answer that holds aligned times or chains (backend/cache/)."""

from __future__ import annotations

from .run import run


def offsets(con, analysis_id: str) -> tuple[tuple[int, int], ...]:
    """The analysis' (source id, clock offset) pairs, by source id: a cache key's part."""
    return tuple(run(con, "SELECT id, clock_offset_ns FROM sources WHERE analysis_id = ? ORDER BY id", [analysis_id]))


def source_offsets(con, analysis_id: str) -> dict[int, int]:
    """Each source's clock offset, by source id."""
    return dict(offsets(con, analysis_id))
