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

# the analysis' request sources: their ids, and whether any of their requests was remapped from a layer above
_SOURCES = f"""
    SELECT s.id, EXISTS (SELECT 1 FROM blk_requests r WHERE r.source_id = s.id AND r.from_dev IS NOT NULL) AS remapped
    FROM sources s WHERE s.analysis_id = $aid AND {REQUEST_SOURCES} ORDER BY s.id
"""


def _select(ids: list[int]) -> str:
    """The requests of the sources `ids` (ints read from the database), aligned, with the layer columns."""
    return f"""
    SELECT {_COLUMNS}, {", ".join(f"r.{c} + s.clock_offset_ns AS {c}" for c in _ALIGNED)}, r.q2c_ns, r.d2c_ns,
           r.from_dev, r.from_sector, regexp_extract(s.filename, '^(.+)\\.blktrace\\.[0-9]+$', 1) AS set_name
    FROM blk_requests r JOIN sources s ON s.id = r.source_id
    WHERE r.source_id IN ({", ".join(str(int(i)) for i in ids)})"""


# One step for many I/Os at once: `t` holds each I/O's key k and where its stack ends so far; per k, the one
# request found (ties: the first source and line).
_STEP = """
    WITH t AS (SELECT unnest($k) AS k, unnest($dev) AS dev, unnest($sector) AS sector, unnest($at) AS at,
                      unnest($until) AS until),
         r AS ({select})
    SELECT t.k, r.* FROM t JOIN r ON {match}
    QUALIFY row_number() OVER (PARTITION BY t.k ORDER BY {order}, r.source_id, r.line) = 1"""
# up: the latest bio queued on (from_dev, from_sector) at or before the lower request started
_UP = ("r.dev = t.dev AND r.sector = t.sector AND r.q_ns <= t.at", "r.q_ns DESC")
# down: the first request remapped from (dev, sector), queued from the upper's start until its completion
_DOWN = (
    "r.from_dev = t.dev AND r.from_sector = t.sector AND r.q_ns >= t.at AND (t.until IS NULL OR r.q_ns <= t.until)",
    "r.q_ns",
)
_GIVEN = """
    WITH t AS (SELECT unnest($k) AS k, unnest($sid) AS sid, unnest($line) AS line), r AS ({select})
    SELECT t.k, r.* FROM t JOIN r ON r.source_id = t.sid AND r.line = t.line"""


def _start(r: dict) -> int | None:
    return next((r[k] for k in ("q_ns", "i_ns", "d_ns") if r[k] is not None), None)


class Layers:
    """The block layers of one analysis' I/Os. Reads which sources hold requests once (one query); an analysis
    whose requests were never remapped (no device-mapper, md or partition remap in its traces) has one layer per
    I/O, so it answers [] without a query; else it walks every asked I/O's stack together, one query per step up
    or down (at most 2 x MAX_LAYERS + 1 queries, however many I/Os are asked)."""

    def __init__(self, fetch: Fetch, analysis_id: str):
        self._fetch = fetch
        found = fetch(_SOURCES, {"aid": analysis_id})
        self.sources = [r["id"] for r in found]  # the analysis' sources of block requests (REQUEST_SOURCES)
        self._select = _select(self.sources) if self.sources else ""
        self.remapped = any(r["remapped"] for r in found)

    def of(self, source_id: int, line: int) -> list[dict]:
        """The layers of the I/O that request (source_id, line) belongs to, top (the device the task queued on)
        to bottom, each with `held_ns` (the time it held the I/O: until the layer below queued it; the bottom's:
        its own start to completion), `share` of the whole and `kind`; [] when the request went through one layer
        only."""
        return self.of_many([(source_id, line)])[0]

    def of_many(self, requests: list[tuple[int, int]]) -> list[list[dict]]:
        """`of` for each (source_id, line), in order."""
        if not self.remapped or not requests:
            return [[] for _ in requests]
        stacks: list[list[dict]] = [[] for _ in requests]
        given = {"k": list(range(len(requests))), "sid": [s for s, _ in requests], "line": [ln for _, ln in requests]}
        for row in self._fetch(_GIVEN.format(select=self._select), given):
            stacks[row.pop("k")].append(row)
        self._walk(stacks, up=True)
        self._walk(stacks, up=False)
        return [_timed(rows) for rows in stacks]

    def _walk(self, stacks: list[list[dict]], up: bool) -> None:
        """Extends each stack up (to the device the bio was queued on) or down (to the device that served it), one
        step for all of them at a time, until no stack finds a next layer."""
        going = [k for k, rows in enumerate(stacks) if rows]
        match, order = _UP if up else _DOWN
        while going:
            ends = []  # (k, dev, sector, at, until) of each stack that may go on
            for k in going:
                rows = stacks[k]
                end = rows[0] if up else rows[-1]
                at = _start(end)
                if len(rows) >= MAX_LAYERS or at is None or (up and end["from_dev"] is None):
                    continue
                dev, sector = (end["from_dev"], end["from_sector"]) if up else (end["dev"], end["sector"])
                ends.append((k, dev, sector, at, None if up else end["c_ns"]))
            if not ends:
                return
            given = dict(zip(("k", "dev", "sector", "at", "until"), map(list, zip(*ends))))
            going = []
            for row in self._fetch(_STEP.format(select=self._select, match=match, order=order), given):
                k = row.pop("k")
                stacks[k].insert(0, row) if up else stacks[k].append(row)
                going.append(k)


def _timed(rows: list[dict]) -> list[dict]:
    """The layers found (top to bottom) with held_ns, kind, share and name; [] for one layer."""
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
