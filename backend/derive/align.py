"""Clock alignment: where each source's own clock sits on the analysis timeline.

Every source has `clock_offset_ns` (aligned time = the source's own time + offset), `clock` (the clock its
times come from, when the file names it) and `alignment` (JSON: how the offset was found, what matched,
warnings). `derive` runs at ingest, before the chains are derived (they compare times across sources):

* The reference is the first blktrace (blkparse) source, else the first ftrace source: offset 0.
* An ftrace source that holds block tracepoint events (block_rq_insert / block_rq_issue /
  block_rq_complete) is aligned to a blktrace of the same capture by matching its events to the
  blktrace's requests on device, sector and size (insert ↔ I, issue ↔ D, complete ↔ C): every candidate
  pair gives a difference of clocks; the offset is the median of the differences in the densest
  DENSE_NS-wide window (repeated sectors give wrong pairs; they scatter, the right ones pile up). Reported:
  how many events matched (within MATCH_NS of the offset) and the residual spread (p50 and max of
  |difference − offset| over the matched).
* Otherwise, an ftrace or blkparse source whose span overlaps the reference's by half or more is taken to
  share its clock (method `same_clock`, offset 0); one that does not starts where the reference starts
  (method `start`: approximate, said so in a warning).
* An offcputime dump has no timestamps: its own clock runs from 0 over its capture window (the header's
  `for N secs`, else unknown), placed at the reference's start (method `start`) until the user places it.
* `set_offset` is the PATCH: a user's offset (method `manual`), or "same span as source X".

Clock names: an ftrace file may name its clock in a header or comment (`trace_clock: ... [mono]`, `clock:
boot`, trace-cmd's `--ts-offset`...); the `local` clock is per CPU and not comparable across CPUs, a counter
clock (`counter`, `x86-tsc`, `uptime`) is not in ns: both are warned about. blkparse's times are
CLOCK_MONOTONIC ns relative to the start of the trace.
"""

from __future__ import annotations

import json
import re

from ..db import execute
from ..limits import TIME_MAX, TIME_MIN

DENSE_NS = 200_000  # width of the window in which the right clock differences pile up
MATCH_NS = 100_000  # an event matches when its difference is this close to the offset
MAX_PAIRS_PER_KEY = 16  # a (dev, sector, size, phase) seen more often than this is too ambiguous to use
CLOCKS = (
    "local",
    "global",
    "counter",
    "uptime",
    "perf",
    "mono_raw",
    "mono",
    "boot",
    "tai",
    "x86-tsc",
    "ppc-tb",
    "s390-tod",
)
NOT_NS = frozenset({"counter", "uptime", "x86-tsc", "ppc-tb", "s390-tod"})
BLKPARSE_CLOCK = "blktrace (CLOCK_MONOTONIC, from the start of the trace)"

# kernel text of the block tracepoints (FORMATS.md 3.1): "8,0 WS 4096 () 123456 + 8 ..." (issue/insert have
# the byte count, complete has not)
_BLOCK_EVENT = r"^\s*(\d+),(\d+) (\S+) (?:\d+ )?\([^)]*\) (\d+) \+ (\d+)"
_PHASE = {"block_rq_insert": "i_ns", "block_rq_issue": "d_ns", "block_rq_complete": "c_ns"}
_CLOCK_NOTE = re.compile(
    r"\[(%s)\]|\bclock\b\s*[:=]?\s*(%s)\b|\b(%s)\s+clock\b" % (("|".join(map(re.escape, CLOCKS)),) * 3), re.I
)


def clock_of(notes: list[str]) -> str | None:
    """The trace clock a source's header notes name (`[mono]` as in the trace_clock file, `clock: boot`, ...)."""
    for n in notes:
        m = _CLOCK_NOTE.search(n)
        if m:
            return next(g for g in m.groups() if g).lower()
    return None


def _sources(con, analysis_id: str) -> list[dict]:
    cur = execute(
        con,
        "SELECT id, format, filename, notes, t_min_ns, t_max_ns, clock_offset_ns FROM sources"
        " WHERE analysis_id = ? ORDER BY id",
        [analysis_id],
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _store(con, sid: int, offset: int, clock: str | None, alignment: dict) -> None:
    execute(
        con,
        "UPDATE sources SET clock_offset_ns = ?, clock = ?, alignment = ? WHERE id = ?",
        [offset, clock, json.dumps(alignment), sid],
    )


def derive(con, analysis_id: str) -> None:
    """Sets every source's clock, offset and how it was found (inside the ingest's transaction)."""
    sources = _sources(con, analysis_id)
    for s in sources:
        s["notes"] = json.loads(s["notes"]) if isinstance(s["notes"], str) else (s["notes"] or [])
        s["clock"] = BLKPARSE_CLOCK if s["format"] == "blkparse" else clock_of(s["notes"])
        if s["format"] == "offcputime":  # its own clock: 0 at the start of its capture window
            window = next((float(n[9:]) for n in s["notes"] if n.startswith("window_s=")), None)
            s["t_min_ns"], s["t_max_ns"] = 0, round(window * 1e9) if window else None
            execute(con, "UPDATE sources SET t_min_ns = ?, t_max_ns = ? WHERE id = ?", [0, s["t_max_ns"], s["id"]])
    timed = [s for s in sources if s["t_min_ns"] is not None and s["format"] != "offcputime"]
    ref = next((s for s in timed if s["format"] == "blkparse"), timed[0] if timed else None)
    start = ref["t_min_ns"] if ref else 0
    blk_ids = [s["id"] for s in sources if s["format"] == "blkparse"]
    for s in sources:
        warnings = _clock_warnings(s["clock"])
        if s is ref:
            result = {
                "method": "reference",
                "reference_source_id": None,
                "matched": None,
                "warnings": warnings,
                "detail": "the reference clock of this analysis: its own times are the timeline's",
            }
            offset = 0
        elif s["format"] == "ftrace" and blk_ids and (m := match_block_events(con, s["id"], blk_ids)):
            offset = m.pop("offset_ns")
            result = {
                "method": "block_events",
                "reference_source_id": m["blk_source_id"],
                **m,
                "warnings": warnings,
                "detail": f"{m['matched']} block events matched blktrace requests (device, sector, size);"
                f" residual p50 {m['residual_p50_ns']} ns, max {m['residual_max_ns']} ns",
            }
        elif s["format"] != "offcputime" and _overlap(s, ref) >= 0.5:
            offset = 0
            result = {
                "method": "same_clock",
                "reference_source_id": ref["id"],
                "matched": None,
                "warnings": warnings,
                "detail": f"no block events to match; its times overlap those of source {ref['id']} "
                f"({ref['filename']}) by {_overlap(s, ref):.0%}: taken as the same clock",
            }
        else:
            own = s["t_min_ns"] if s["t_min_ns"] is not None else 0
            offset = start - own
            why = (
                "a dump has no timestamps: its capture window is placed at the start of the analysis; place it"
                " with a start time or the span of another source"
                if s["format"] == "offcputime"
                else "no block events to match: its first event is placed at the reference's first event;"
                " set the offset by hand if the captures did not start together"
            )
            result = {
                "method": "start",
                "reference_source_id": ref["id"] if ref else None,
                "matched": None,
                "warnings": warnings
                + ([] if s["format"] == "offcputime" else ["aligned by start times only (approximate)"]),
                "detail": why,
            }
        _store(con, s["id"], offset, s["clock"], result)


def _overlap(a: dict, b: dict | None) -> float:
    """How much of the shorter of two spans (own clocks) the other covers, 0..1."""
    if b is None or None in (a["t_min_ns"], a["t_max_ns"], b["t_min_ns"], b["t_max_ns"]):
        return 0.0
    inter = min(a["t_max_ns"], b["t_max_ns"]) - max(a["t_min_ns"], b["t_min_ns"])
    shorter = max(1, min(a["t_max_ns"] - a["t_min_ns"], b["t_max_ns"] - b["t_min_ns"]))
    return max(0.0, inter / shorter)


def _clock_warnings(clock: str | None) -> list[str]:
    if clock == "local":
        return [
            "trace clock 'local' is per CPU: events of different CPUs can be out of order by a few µs, and it"
            " has no exact relation to other clocks"
        ]
    if clock in NOT_NS:
        return [f"trace clock '{clock}' counts ticks, not ns: times cannot be aligned exactly"]
    return []


def match_block_events(con, ftrace_sid: int, blk_ids: list[int]) -> dict | None:
    """The offset that puts the ftrace source's block events on the blktrace's clock, or None without matches."""
    rows = execute(
        con,
        f"""
        WITH f AS (
            SELECT t_ns, event,
                   regexp_extract(text, '{_BLOCK_EVENT}', ['maj', 'min', 'rwbs', 'sector', 'nsect']) AS k
            FROM trace_events WHERE source_id = $sid AND t_ns IS NOT NULL
              AND event IN ('block_rq_insert', 'block_rq_issue', 'block_rq_complete')
        ), fe AS (
            SELECT t_ns, CASE event WHEN 'block_rq_insert' THEN 'I' WHEN 'block_rq_issue' THEN 'D' ELSE 'C' END AS ph,
                   k.maj || ',' || k.min AS dev, TRY_CAST(k.sector AS BIGINT) AS sector,
                   TRY_CAST(k.nsect AS BIGINT) AS nsect
            FROM f WHERE k.maj <> ''
        ), b AS (
            SELECT r.source_id, unnest([{{'ph': 'I', 't': r.i_ns}}, {{'ph': 'D', 't': r.d_ns}},
                                        {{'ph': 'C', 't': r.c_ns}}], recursive := true),
                   r.dev, r.sector, r.nsect, s.clock_offset_ns AS off
            FROM blk_requests r JOIN sources s ON s.id = r.source_id
            WHERE list_contains($blk, r.source_id)
        ), bk AS (
            SELECT * FROM b WHERE t IS NOT NULL
            QUALIFY count(*) OVER (PARTITION BY dev, sector, nsect, ph) <= {MAX_PAIRS_PER_KEY}
        )
        SELECT bk.t + bk.off - fe.t_ns AS d, bk.source_id
        FROM fe JOIN bk USING (dev, sector, nsect, ph)
        """,
        {"sid": ftrace_sid, "blk": blk_ids},
    ).fetchall()
    if not rows:
        return None
    import numpy as np

    d = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    src = np.fromiter((r[1] for r in rows), np.int64, len(rows))
    order = np.argsort(d, kind="stable")
    d, src = d[order], src[order]
    # the densest window of width DENSE_NS: for each difference, how many lie in [d, d + DENSE_NS]
    ends = np.searchsorted(d, d + DENSE_NS, side="right")
    i = int(np.argmax(ends - np.arange(len(d))))
    offset = int(np.median(d[i : ends[i]]))
    near = np.abs(d - offset) <= MATCH_NS
    resid = np.abs(d[near] - offset)
    blk_sid = int(np.bincount(src[near]).argmax())
    return {
        "offset_ns": offset,
        "matched": int(near.sum()),
        "candidates": int(len(d)),
        "residual_p50_ns": int(np.median(resid)),
        "residual_max_ns": int(resid.max()),
        "blk_source_id": blk_sid,
    }


def set_offset(
    con, analysis_id: str, source_id: int, offset_ns: int | None = None, same_span_as: int | None = None
) -> dict:
    """A user's placement of a source (inside a transaction the caller commits). Returns the alignment stored.
    Raises LookupError (no such source) or ValueError (a placement that cannot be done)."""
    sources = {s["id"]: s for s in _sources(con, analysis_id)}
    s = sources.get(source_id)
    if s is None:
        raise LookupError(f"no source {source_id} in this analysis")
    clock = execute(con, "SELECT clock FROM sources WHERE id = ?", [source_id]).fetchall()[0][0]
    if same_span_as is not None:
        other = sources.get(same_span_as)
        if other is None:
            raise LookupError(f"no source {same_span_as} in this analysis")
        if other["t_min_ns"] is None:
            raise ValueError(f"source {same_span_as} ({other['filename']}) has no time span to copy")
        if same_span_as == source_id:
            raise ValueError("a source cannot take its own span")
        own_min = s["t_min_ns"] if s["t_min_ns"] is not None else 0
        offset = other["t_min_ns"] + other["clock_offset_ns"] - own_min
        detail = f"placed by hand: same start as source {same_span_as} ({other['filename']})"
        if s["format"] == "offcputime" and s["t_max_ns"] is None:  # a window of unknown length takes the span
            execute(
                con,
                "UPDATE sources SET t_min_ns = 0, t_max_ns = ? WHERE id = ?",
                [other["t_max_ns"] - other["t_min_ns"], source_id],
            )
            detail = f"placed by hand: the span of source {same_span_as} ({other['filename']})"
    elif offset_ns is not None:
        offset, detail = offset_ns, "set by hand"
    else:
        raise ValueError("give clock_offset_ns or same_span_as")
    lo, hi = s["t_min_ns"], s["t_max_ns"] if s["t_max_ns"] is not None else s["t_min_ns"]
    if lo is not None and same_span_as is not None and s["format"] == "offcputime" and s["t_max_ns"] is None:
        lo, hi = 0, other["t_max_ns"] - other["t_min_ns"]
    if not TIME_MIN <= offset <= TIME_MAX or (
        lo is not None and not TIME_MIN <= lo + offset <= hi + offset <= TIME_MAX
    ):
        raise ValueError(
            f"an offset of {offset} ns would put the source's times outside ±2^62 ns; give one that keeps"
            f" them within [{TIME_MIN}, {TIME_MAX}]"
        )
    result = {
        "method": "manual",
        "reference_source_id": same_span_as,
        "matched": None,
        "warnings": _clock_warnings(clock),
        "detail": detail,
    }
    _store(con, source_id, offset, clock, result)
    return result
