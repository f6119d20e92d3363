"""What every read of an analysis starts from, read once and kept (the AnalysisCache's answers): the analysis' row
(for the 404 check), its sources with their formats, clock offsets and spans, which of them hold block requests,
and the levels of their timeline summaries.

These change only by a PATCH (clock offsets) or a DELETE, which both call `cache.forget(id)` after their commit. The
kept catalogue is keyed by the analysis' generation in the cache (`cache.generation`), read before the rows: a read
that began before a forget may keep what it read, under the old generation, where no later read looks. An analysis
not found is never kept (an upload may yet commit it).

Kept, a windowed read asks the database only its own question: before, each read asked 2-4 small queries of
`analyses` and `sources` first (1-2 ms each, a third of a small read's time).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from .run import run

if TYPE_CHECKING:
    from ..cache import AnalysisCache


@dataclass(frozen=True)
class Source:
    id: int
    filename: str
    format: str
    clock_offset_ns: int
    t_min_ns: int | None  # the source's own times (add clock_offset_ns for the analysis timeline)
    t_max_ns: int | None
    # the analysis' requests are its: a blkparse source; with none, an ftrace source with rows in blk_requests
    # (perf's, or rebuilt from block tracepoints)
    has_requests: bool
    tl_w0_ns: int | None  # the timeline summaries' level-0 bucket (None: no summaries)
    tl_top_level: int | None


@dataclass(frozen=True)
class Catalogue:
    id: str
    name: str
    created_at: datetime  # UTC
    sources: tuple[Source, ...]  # by id

    def offsets(self) -> tuple[tuple[int, int], ...]:
        """(source id, clock offset) of each source, by source id: a part of the key of answers holding aligned
        times."""
        return tuple((s.id, s.clock_offset_ns) for s in self.sources)

    def request_source_ids(self) -> list[int]:
        """The ids of the sources of block requests, in order (`has_requests`): block_layers.REQUEST_SOURCES."""
        return [s.id for s in self.sources if s.has_requests]

    def request_sources(self) -> list[tuple[int, int]]:
        """(id, clock offset) of the sources of block requests."""
        ids = set(self.request_source_ids())
        return [(s.id, s.clock_offset_ns) for s in self.sources if s.id in ids]


class _NotFound(Exception):
    pass


def catalogue(con, cache: AnalysisCache, analysis_id: str) -> Catalogue | None:
    """The analysis' catalogue, or None when there is no analysis of that id."""
    key = (analysis_id, "catalogue", cache.generation(analysis_id))
    try:
        return cache.shared(key, lambda: _read(con, analysis_id), lambda c: 200 + 300 * len(c.sources))
    except _NotFound:
        return None


def _read(con, analysis_id: str) -> Catalogue:
    found = run(con, "SELECT id, name, created_at FROM analyses WHERE id = ?", [analysis_id])
    if not found:
        raise _NotFound(analysis_id)
    aid, name, created = found[0]
    rows = run(
        con,
        "SELECT s.id, s.filename, s.format, s.clock_offset_ns, s.t_min_ns, s.t_max_ns, m.w0_ns, m.top_level"
        " FROM sources s LEFT JOIN tl_meta m ON m.source_id = s.id WHERE s.analysis_id = ? ORDER BY s.id",
        [analysis_id],
    )
    blkparse = any(r[2] == "blkparse" for r in rows)

    def has_requests(sid: int, fmt: str) -> bool:
        # asked of an ftrace source only where no blkparse source holds the requests, one source at a time (its
        # first request found by the zone maps: a semi-join with every request costs 0.03-0.09 CPU-s for 2 M)
        if fmt == "blkparse":
            return True
        return (
            fmt == "ftrace"
            and not blkparse
            and bool(run(con, "SELECT 1 FROM blk_requests WHERE source_id = ? LIMIT 1", [sid]))
        )

    sources = tuple(Source(*r[:6], has_requests(r[0], r[2]), *r[6:]) for r in rows)
    return Catalogue(aid, name, created.replace(tzinfo=timezone.utc), sources)


def offsets_now(con, analysis_id: str) -> tuple[tuple[int, int], ...]:
    """The analysis' (source id, clock offset) pairs, by source id, as committed now (not kept): for what is named
    or stored by them (the SQL console's copies, the stored first views) and for reads that scan anyway."""
    return tuple(run(con, "SELECT id, clock_offset_ns FROM sources WHERE analysis_id = ? ORDER BY id", [analysis_id]))


def offsets(con, cache: AnalysisCache, analysis_id: str) -> tuple[tuple[int, int], ...]:
    """The analysis' (source id, clock offset) pairs, by source id, as kept (none for an unknown analysis)."""
    found = catalogue(con, cache, analysis_id)
    return found.offsets() if found else ()


def source_offsets(con, cache: AnalysisCache, analysis_id: str) -> dict[int, int]:
    """Each source's clock offset, by source id."""
    return dict(offsets(con, cache, analysis_id))
