"""An ftrace source's time span, its DERIVE_SOURCE step (derive/pipeline.py), with a note when its scheduler events
carry no time."""

from __future__ import annotations

from ..db import execute


def span(con, source_id: int, report) -> tuple[int | None, int | None]:
    """An ftrace source's time span (ns): its first and last timestamp of any kind, as the trace printed them. A call
    seen only by its exit (partial, with an exit) has an entry computed from its duration, before the capture began:
    not a time the trace printed, so not where the capture starts (the views say such a call entered before it).
    Notes scheduler events that carry no time (tracefs function_graph text without funcgraph-abstime prints an
    event as a comment with none): no wait can be measured from them, and the user is told how to record them."""
    untimed = execute(
        con, "SELECT count(*) FILTER (WHERE t_ns IS NULL), count(*) FROM sched_switch WHERE source_id = ?", [source_id]
    ).fetchall()[0]
    if untimed[0]:
        report.note(
            f"{untimed[0]} of {untimed[1]} sched_switch events have no timestamp (function_graph text without"
            " funcgraph-abstime), so no wait is measured from them: record with"
            " `echo 1 > /sys/kernel/tracing/options/funcgraph-abstime` (and funcgraph-proc), or with trace-cmd"
        )
    return execute(
        con,
        "SELECT min(lo), max(hi) FROM ("
        " SELECT min(CASE WHEN partial AND exit_ns IS NOT NULL THEN exit_ns ELSE coalesce(entry_ns, exit_ns) END) lo,"
        " max(coalesce(exit_ns, entry_ns)) hi FROM fg_call_rows"
        " WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_switch WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM sched_wakeup WHERE source_id = $s"
        " UNION ALL SELECT min(t_ns), max(t_ns) FROM trace_events WHERE source_id = $s)",
        {"s": source_id},
    ).fetchall()[0]
