"""The layers of the block stack one I/O went through: a bio queued on a device-mapper / md / LVM device (bio-based:
Q, then C, no I or D of its own) and the request it became on the device below once the upper layer remapped it
(blktrace's `A` record on the lower device: `<- (253,0) 2048`, kept as the request's from_dev / from_sector).

Where the time went: an upper layer held the bio from its Q until the lower device queued it (`held_ns`: a dm
`delay` target's sleep, a thin pool's allocation, md's resync barrier...); the bottom request's own time is its
Q→C (or what the trace has of it). The layer that held the I/O longest is where a chain of waits ends
(derive/chains.match_requests), and the request view lists every layer (queries/requests.request_detail).

Requests are matched across sources of one analysis (a blktrace per device is a source each) on the analysis'
timeline (each source's clock_offset_ns): the upper is the latest bio on (from_dev, from_sector) queued before the
lower request, the lower the first request remapped from (dev, sector) queued at or after the upper bio and before
it completed. Used at ingest (derive) and at read time (queries), each with its own way to run a query (`fetch`:
SQL and named parameters -> rows as dicts): it reads, it never writes.
"""

from __future__ import annotations

from typing import Callable

Fetch = Callable[[str, dict], list[dict]]

# the sources (alias s) whose block requests an analysis shows: its blktraces (blkparse), else the ftrace-format
# sources that rebuilt requests from block tracepoints (perf script text: parsers/perf.py; other ftrace captures:
# derive/block_events.py), which would count a blktrace's requests a second time
REQUEST_SOURCES = (
    "(s.format = 'blkparse' OR s.format = 'ftrace'"
    " AND NOT EXISTS (SELECT 1 FROM sources b WHERE b.analysis_id = s.analysis_id AND b.format = 'blkparse')"
    " AND EXISTS (SELECT 1 FROM blk_requests q WHERE q.source_id = s.id))"
)

MAX_LAYERS = 8  # dm over md over a partition over a disk is 4; a loop guards against a remap cycle in a bad trace

_COLUMNS = "r.source_id, r.line, r.dev, r.sector, r.nsect, r.rwbs, r.pid, r.comm"
_ALIGNED = ("q_ns", "i_ns", "d_ns", "c_ns")

_SELECT = f"""
    SELECT {_COLUMNS}, {", ".join(f"r.{c} + s.clock_offset_ns AS {c}" for c in _ALIGNED)}, r.q2c_ns, r.d2c_ns,
           r.from_dev, r.from_sector, regexp_extract(s.filename, '^(.+)\\.blktrace\\.[0-9]+$', 1) AS set_name
    FROM blk_requests r JOIN sources s ON s.id = r.source_id
    WHERE s.analysis_id = $aid AND {REQUEST_SOURCES}
"""

_UPPER = (
    _SELECT
    + """ AND r.dev = $from_dev AND r.sector = $from_sector AND r.q_ns + s.clock_offset_ns <= $at
    ORDER BY r.q_ns + s.clock_offset_ns DESC LIMIT 1"""
)
_LOWER = (
    _SELECT
    + """ AND r.from_dev = $dev AND r.from_sector = $sector AND r.q_ns + s.clock_offset_ns >= $q
      AND ($c IS NULL OR r.q_ns + s.clock_offset_ns <= $c)
    ORDER BY r.q_ns + s.clock_offset_ns LIMIT 1"""
)
_ONE = _SELECT + " AND r.source_id = $sid AND r.line = $line"


def _start(r: dict) -> int | None:
    return next((r[k] for k in ("q_ns", "i_ns", "d_ns") if r[k] is not None), None)


def layers(fetch: Fetch, analysis_id: str, source_id: int, line: int) -> list[dict]:
    """The layers of the I/O that request (source_id, line) belongs to, top (the device the task queued on) to
    bottom, each with `held_ns` (the time it held the I/O: until the layer below queued it; the bottom's: its own
    start to completion), `share` of the whole and `kind`; [] when the request went through one layer only."""
    rows = fetch(_ONE, {"aid": analysis_id, "sid": source_id, "line": line})[:1]
    if not rows:
        return []
    while rows[0]["from_dev"] is not None and len(rows) < MAX_LAYERS:  # up to the device the bio was queued on
        at = _start(rows[0])
        if at is None:
            break
        up = fetch(
            _UPPER,
            {"aid": analysis_id, "from_dev": rows[0]["from_dev"], "from_sector": rows[0]["from_sector"], "at": at},
        )
        if not up:
            break
        rows.insert(0, up[0])
    while len(rows) < MAX_LAYERS:  # down to the device that served it
        low = rows[-1]
        q = _start(low)
        if q is None:
            break
        down = fetch(_LOWER, {"aid": analysis_id, "dev": low["dev"], "sector": low["sector"], "q": q, "c": low["c_ns"]})
        if not down:
            break
        rows.append(down[0])
    if len(rows) < 2:
        return []
    for upper, lower in zip(rows, rows[1:]):
        a, b = _start(upper), _start(lower)
        upper["held_ns"] = b - a if a is not None and b is not None and b >= a else None
        upper["kind"] = "bio-based (remapped down)" if upper["d_ns"] is None else "request-based (remapped down)"
    bottom = rows[-1]
    s = _start(bottom)
    bottom["held_ns"] = bottom["c_ns"] - s if s is not None and bottom["c_ns"] is not None else None
    bottom["kind"] = "the device that served it"
    total = sum(r["held_ns"] or 0 for r in rows)
    for r in rows:
        r["share"] = round(r["held_ns"] / total, 4) if total and r["held_ns"] is not None else None
        r["name"] = r.pop("set_name") or None
        del r["from_dev"], r["from_sector"]
    return rows


def holder(rows: list[dict]) -> dict | None:
    """The layer that held the I/O longest (where a chain of waits ends), or None."""
    timed = [r for r in rows if r["held_ns"] is not None]
    return max(timed, key=lambda r: r["held_ns"]) if timed else None


def device_text(row: dict) -> str:
    """`253,0 (dm-0)` when the capture names the device, else `253,0`."""
    return f"{row['dev']} ({row['name']})" if row.get("name") else row["dev"]
