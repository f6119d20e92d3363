"""What the API reads of analyses and their sources: the list, one analysis (or None), its sources with what was
skipped, the newest ones (for the warm-up)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from ..block_layers import REQUEST_SOURCES
from . import offcpu
from .run import run


def _utc(naive: datetime) -> datetime:
    return naive.replace(tzinfo=timezone.utc)


def analysis(con, analysis_id: str) -> dict | None:
    """The analysis' id, name and creation time (UTC), or None when there is none of that id."""
    rows = run(con, "SELECT id, name, created_at FROM analyses WHERE id = ?", [analysis_id])
    if not rows:
        return None
    aid, name, created = rows[0]
    return {"id": aid, "name": name, "created_at": _utc(created)}


def analyses(con, ids: list[str] | None = None) -> list[dict]:
    """Every analysis (or those of `ids` that exist), newest first, with its number of sources and the bytes of the
    files it was made from."""
    rows = run(
        con,
        "SELECT a.id, a.name, a.created_at, count(s.id), coalesce(sum(s.bytes), 0)::BIGINT FROM analyses a"
        " LEFT JOIN sources s"
        " ON s.analysis_id = a.id WHERE ?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], a.id)"
        " GROUP BY ALL ORDER BY a.created_at DESC, a.id",
        [ids, ids],
    )
    return [{"id": r[0], "name": r[1], "created_at": _utc(r[2]), "source_count": r[3], "bytes": r[4]} for r in rows]


def newest(con, n: int) -> list[str]:
    """The ids of the n newest analyses."""
    return [r[0] for r in run(con, "SELECT id FROM analyses ORDER BY created_at DESC, id LIMIT ?", [n])]


def count(con) -> int:
    return run(con, "SELECT count(*) FROM analyses")[0][0]


def loads(value):
    """A JSON column's value (DuckDB returns JSON as text)."""
    return json.loads(value) if isinstance(value, str) else value


def sources(con, analysis_id: str, source_id: int | None = None) -> list[dict]:
    """The analysis' sources (or the one of that id), with what was skipped, their notes, clock and alignment, how
    many waker stacks each has, and whether its block requests are the analysis' (block_layers.REQUEST_SOURCES)."""
    rows = run(
        con,
        "SELECT id, filename, format, events, skipped_lines, lines, bytes, sha256, skipped_examples, notes, clock_offset_ns,"
        f" clock, alignment, t_min_ns, t_max_ns, files, {REQUEST_SOURCES} AS has_requests FROM sources s"
        " WHERE analysis_id = ? AND (? IS NULL OR id = ?) ORDER BY id",
        [analysis_id, source_id, source_id],
        shape="dicts",
    )
    wakes = offcpu.waker_stacks_by_source(con, analysis_id)
    for s in rows:
        for k in ("skipped_examples", "notes", "alignment", "files"):
            s[k] = loads(s[k])
        if s["files"] is None:  # written before sources had files: its one file
            s["files"] = [{"filename": s["filename"], "bytes": s["bytes"], "kind": s["format"], "sha256": s["sha256"]}]
        s["waker_stacks"] = wakes.get(s["id"], 0)
    return rows


def with_span(con, found: dict) -> dict:
    """An analysis (as `analysis` returns it) with its sources and its time span on the analysis timeline."""
    srcs = sources(con, found["id"])
    starts = [s["t_min_ns"] + s["clock_offset_ns"] for s in srcs if s["t_min_ns"] is not None]
    ends = [s["t_max_ns"] + s["clock_offset_ns"] for s in srcs if s["t_max_ns"] is not None]
    return {**found, "sources": srcs, "t_min_ns": min(starts, default=None), "t_max_ns": max(ends, default=None)}
