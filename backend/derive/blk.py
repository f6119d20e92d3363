"""Block requests at ingest: notes on what the trace lacked, and each source's slowest requests per metric (blk_top).

The parser (parsers/_blkparse.c) rebuilds requests while it streams the file: blk_requests holds one
row per request with the time, file line and CPU of each phase (A Q G I D C) and the phase
durations; blk_bios the bios merged into another request (M back, F front) with the request they
joined; blk_events every event that is not a request phase (plugs, splits, requeues, scheduler `m`
messages, flushes, ...), with the request it belongs to where there is one.
btt's conventions are followed (shared/FORMATS.md 1.6): zero-length (flush) and passthrough requests
are not requests; the issuing process is the one that queued the bio (Q, else G, I, then D).
"""

from __future__ import annotations

from parsers.common import ParseReport

from ..db import execute
from ..schema.tables import REQUEST_COLUMNS, TOP_METRICS


def derive(con, source_id: int, report: ParseReport) -> tuple[int | None, int | None]:
    """Notes what the trace lacked; keeps the slowest requests per metric (blk_top); returns the source's time
    span (ns). The parser found the slowest, the span and the phases going backwards as it emitted the requests
    (report.facts): no scan of them here, only a join to copy the slowest. A source of another format that rebuilt
    no requests (its report has no such facts) is left as it is (None)."""
    if "backwards" not in report.facts:
        return None
    sid = {"sid": source_id}
    orphans = execute(con, "SELECT count(*) FROM blk_bios WHERE source_id = $sid AND req_line IS NULL", sid).fetchall()[
        0
    ][0]
    if orphans:
        report.note(f"{orphans} merged bios joined a request whose own events are not in the trace")
    facts = report.facts
    backwards, lo, hi = facts["backwards"], facts["lo"], facts["hi"]
    if backwards:
        report.note(
            f"{backwards} requests have phases whose times go backwards (the trace's clock jumps);"
            " those phase durations are left out"
        )
    slowest = {m: facts[m] for m in TOP_METRICS}
    lines = [ln for m in TOP_METRICS for ln in slowest[m]]
    if lines:
        execute(
            con,
            f"INSERT INTO blk_top SELECT k.metric, {', '.join(f'r.{c}' for c in REQUEST_COLUMNS)}"
            " FROM (SELECT unnest($metrics) AS metric, unnest($lines) AS line) k"
            " JOIN blk_requests r ON r.line = k.line WHERE r.source_id = $sid",
            {"sid": source_id, "metrics": [m for m in TOP_METRICS for _ in slowest[m]], "lines": lines},
        )
    ev = execute(con, "SELECT min(t_ns), max(t_ns) FROM blk_events WHERE source_id = $sid", sid).fetchall()[0]
    los, his = [x for x in (lo, ev[0]) if x is not None], [x for x in (hi, ev[1]) if x is not None]
    return (min(los) if los else None), (max(his) if his else None)
