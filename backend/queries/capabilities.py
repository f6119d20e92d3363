"""What an analysis' capture can tell: which views have data, what the capture lacks for the others, and the capture
command that would add it next time; where the trace lost events (buffer overruns), on the analysis' timeline.

Read from the staged and derived rows (counts, a few small aggregates) and the sources' notes; kept per analysis
(stored.py: rows never change after ingest, the lost ranges follow the clock offsets).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from . import stored
from .run import run
from .sqlsearch import rank_case

if TYPE_CHECKING:
    from ..cache import AnalysisCache

# what each view reads, in the order the page shows its tabs
TABS = ("stalls", "timeline", "dispatch", "offcpu", "sources")

SCHED = "-e sched_switch -e sched_wakeup"
FUNCGRAPH = "-p function_graph"
RECORD = "trace-cmd record"

_OVERRUN_HEADERS = (  # tracefs headers: events in the buffer / events written (the rest were overwritten)
    re.compile(r"entries-in-buffer/entries-written:\s*(\d+)/(\d+)"),
    re.compile(r"latency:.*?#(\d+)/(\d+)"),
)


def _count_rows(con, analysis_id: str) -> dict:
    """Per kind of row, how many the analysis has."""
    sql = """
    WITH s AS (SELECT id FROM sources WHERE analysis_id = $aid)
    SELECT * FROM
      (SELECT count(*), count(*) FILTER (pid >= 0), count(*) FILTER (pid < 0), count(entry_ns) + count(exit_ns)
       FROM fg_call_rows WHERE source_id IN (SELECT id FROM s)),
      (SELECT count(*) FROM sched_switch WHERE source_id IN (SELECT id FROM s)),
      (SELECT count(*) FROM sched_wakeup WHERE source_id IN (SELECT id FROM s)),
      (SELECT count(*) FILTER (event IN ('kernel_stack', 'user_stack')), count(*) FILTER (event LIKE 'block_rq_%')
       FROM trace_events WHERE source_id IN (SELECT id FROM s)),
      (SELECT count(*), count(q_ns), count(i_ns), count(d_ns), count(c_ns), count(i2d_ns), count(d2c_ns),
       count(q2c_ns) FROM blk_requests WHERE source_id IN (SELECT id FROM s)),
      (SELECT count(*), count(*) FILTER (kind = 'offwake') FROM offcpu_stacks WHERE source_id IN (SELECT id FROM s)),
      (SELECT count(*), count(*) FILTER (inferred AND kind = 'call'),
       count(*) FILTER (stack_text IS NOT NULL AND stack_text <> '') FROM wait_rows
       WHERE source_id IN (SELECT id FROM s)),
      (SELECT count(*) FROM chains WHERE analysis_id = $aid)
    """  # (one scan of each table: a subquery per count scanned fg_call_rows 4 times)
    names = (
        "calls",
        "calls_with_task",
        "calls_per_cpu",  # of a CPU's pseudo-task (derive/cpu_tasks.py): the lines name no task
        "call_times",
        "sched_switch",
        "sched_wakeup",
        "stack_events",
        "ftrace_block_events",
        "block_requests",
        *(f"requests_with_{p}" for p in ("q", "i", "d", "c", "i2d", "d2c", "q2c")),  # (not API fields: BLOCK_PHASES)
        "offcpu_stacks",
        "offwake_stacks",
        "waits",
        "inferred_waits",
        "waits_with_stack",
        "chains",
    )
    return dict(zip(names, run(con, sql, {"aid": analysis_id})[0]))


# the timestamped lines of an ftrace source: (table, its line column, its time column)
_TIMED = (
    ("sched_switch", "line", "t_ns"),
    ("sched_wakeup", "line", "t_ns"),
    ("trace_events", "line", "t_ns"),
    ("fg_call_rows", "line", "entry_ns"),
    ("fg_call_rows", "exit_line", "exit_ns"),
)


def _run_of(line: str, at: list[int]) -> str:
    """SQL: the run of lines `line` is in (between markers `at`, sorted): k, the number of markers before it, in
    0..len(at); or len(at) + 1 + i when it is marker i's own line."""
    n = len(at)
    return rank_case(
        line,
        at,
        strict=True,
        leaf=lambda k: str(k) if k == n else f"CASE WHEN {line} = {at[k]} THEN {n + 1 + k} ELSE {k} END",
    )


def _lost_ranges(con, analysis_id: str) -> list[dict]:
    """The `[LOST n EVENTS]` / `CPU:n [n EVENTS DROPPED]` markers of ftrace sources, each with the time range it
    sits in on its CPU (the latest time of the CPU's lines before it, the earliest after; aligned), in file order; at
    most 200.

    Read per run of lines between two markers (and before the first, after the last): each run's latest and
    earliest time per CPU, and the markers' own lines apart, in one scan of each table (`_run_of` says which run a
    line is in); a marker's range is then folded from its runs. (A correlated subquery per marker over every
    timestamped line took 13-19 s for 53 markers in 15 M lines; a query per run and table 2.6 s, then 0.31 CPU-s
    for 41 markers in 12 M lines, where one scan per table takes 0.16: the same answer.)"""
    markers = run(
        con,
        "SELECT e.source_id, s.filename, e.line, e.cpu, e.text, s.clock_offset_ns FROM trace_events e"
        " JOIN sources s ON s.id = e.source_id"
        " WHERE s.analysis_id = $aid AND s.format = 'ftrace' AND e.event = 'lost_events'"
        " ORDER BY e.source_id, e.line LIMIT 200",
        {"aid": analysis_id},
    )
    if not markers:
        return []
    lines: dict[int, list[int]] = {}
    for sid, _, line, *_ in markers:
        lines.setdefault(sid, []).append(line)
    parts, params = [], {}
    for sid, at in lines.items():
        params[f"sid{sid}"] = sid
        for table, line, t in _TIMED:
            parts.append(
                f"SELECT {sid} AS sid, {_run_of(line, at)} AS k, cpu, max({t}), min({t}) FROM {table}"
                f" WHERE source_id = $sid{sid} AND {t} IS NOT NULL AND {line} IS NOT NULL GROUP BY ALL"
            )
    runs: dict[int, list[tuple]] = {}
    for sid, k, cpu, latest, earliest in run(con, " UNION ALL ".join(parts), params):
        at = lines[sid]
        how, k = ("in", k) if k <= len(at) else ("at", at[k - len(at) - 1])  # (a marker's own line: k is the line)
        runs.setdefault(sid, []).append((how, k, cpu, latest, earliest))
    out = []
    for sid, filename, line, cpu, text, off in markers:
        j = lines[sid].index(line)  # runs 0..j are before it, j + 1.. after
        before = after = None
        for how, k, run_cpu, latest, earliest in runs.get(sid, ()):
            if cpu is not None and run_cpu != cpu:
                continue
            if (how == "in" and k <= j) or (how == "at" and k < line):
                before = latest if before is None else max(before, latest)
            elif (how == "in" and k > j) or (how == "at" and k > line):
                after = earliest if after is None else min(after, earliest)
        out.append(
            {
                "source_id": sid,
                "filename": filename,
                "line": line,
                "cpu": cpu,
                "t0_ns": None if before is None else before + off,
                "t1_ns": None if after is None else after + off,
                "what": f"{text} (line {line})",
            }
        )
    return out


def _overruns(sources: list[dict]) -> list[dict]:
    """Sources whose tracefs header says events were overwritten (entries in the buffer < entries written): the
    oldest events of the capture are missing, before its first line."""
    out = []
    for s in sources:
        for note in s["notes"]:
            for pattern in _OVERRUN_HEADERS:
                m = pattern.search(note)
                if m and int(m.group(1)) < int(m.group(2)):
                    kept, written = int(m.group(1)), int(m.group(2))
                    out.append(
                        {
                            "source_id": s["id"],
                            "filename": s["filename"],
                            "line": None,
                            "cpu": None,
                            "t0_ns": None,
                            "t1_ns": s["t_min_ns"],
                            "what": f"the buffer overran: {written - kept} of {written} events written were "
                            f"overwritten (header: {m.group(0)}); the capture's oldest events are missing, before "
                            "its first line",
                        }
                    )
                    break
    return out


# the block requests' timed phases, as the Dispatch view names them
BLOCK_PHASES = (("i2d", "I→D"), ("d2c", "D→C"), ("q2c", "Q→C"))
BLKTRACE = "blktrace -d /dev/sdX -o trace"


def _block_gaps(n: dict) -> list[tuple[str, str, str]]:
    """What the block requests lack, why and the command that adds it: (what, why, capture)."""
    q, i, d, c = (n[f"requests_with_{p}"] for p in "qidc")
    out = []
    if not c:
        out.append(
            (
                "D→C and Q→C: time in the device, and in all",
                "no C events: a per-CPU file of this set may be missing (a completion is recorded on the CPU that"
                " completes it, often not the one that issued it), or the capture's action mask left them out",
                f"{BLKTRACE} (no -a mask), then upload every trace.blktrace.N file of the set together",
            )
        )
    if q and not i and not d:
        out.append(
            (
                "I→D and D→C: time in the I/O scheduler and in the device",
                "no I/D events: a bio-based device (dm, md, ...): it queues and completes bios, the disks under it"
                " insert and dispatch the requests",
                "blktrace -d /dev/dm-0 -d /dev/sdX -o trace (the device and the disks under it)",
            )
        )
    elif d and not i:
        out.append(
            (
                "I→D (time in the I/O scheduler)" + ("" if q else " and Q→C (time in all)"),
                "no I events"
                + (
                    " and no Q events: only D and C were captured (an action mask such as -a issue -a complete)"
                    if not q
                    else ": the requests were dispatched without an insert (no I/O scheduler on the path)"
                ),
                f"{BLKTRACE} (no -a mask: every action)",
            )
        )
    elif c and not q and not d:
        out.append(
            (
                "I→D, D→C and Q→C: every phase before the completion",
                "only C events: the capture's action mask kept the completions alone (-a complete)",
                f"{BLKTRACE} (no -a mask: every action)",
            )
        )
    elif i and not d:
        out.append(
            (
                "I→D and D→C: dispatch",
                "no D events: the capture's action mask left them out, or a per-CPU file of this set is missing",
                f"{BLKTRACE} (no -a mask), every trace.blktrace.N file",
            )
        )
    return out


def _view(tab: str, state: str, summary: str) -> dict:
    return {"tab": tab, "state": state, "summary": summary}


def capabilities(con, cache: AnalysisCache, analysis_id: str) -> dict:
    """See the module's docstring: {views, missing, lost, events}."""
    return stored.get(con, cache, analysis_id, "capabilities", (), lambda: _capabilities(con, analysis_id), timed=True)


def _capabilities(con, analysis_id: str) -> dict:
    rows = run(
        con,
        "SELECT id, filename, format, notes, t_min_ns + clock_offset_ns FROM sources WHERE analysis_id = ? ORDER BY id",
        [analysis_id],
    )
    sources = [
        {"id": r[0], "filename": r[1], "format": r[2], "notes": json.loads(r[3]) if r[3] else [], "t_min_ns": r[4]}
        for r in rows
    ]
    formats = {s["format"] for s in sources}
    n = _count_rows(con, analysis_id)
    ftrace = "ftrace" in formats
    has_blk = n["block_requests"] > 0
    views, missing = [], []

    def lack(what: str, why: str, capture: str, own: bool = True) -> None:
        missing.append({"what": what, "why": why, "capture": capture, "own": own})

    # Stalls: waits (scheduler events, or inferred from long calls), their stacks, wakers; or offwaketime's pairs
    if n["waits"]:
        how = []
        if n["waits"] - n["inferred_waits"]:
            how.append(f"{n['waits'] - n['inferred_waits']} from scheduler events")
        if n["inferred_waits"]:
            how.append(f"{n['inferred_waits']} inferred from long sleeping calls")
        stacked = f"{n['waits_with_stack']} with a stack" if n["waits_with_stack"] else "no stacks"
        views.append(
            _view("stalls", "data", f"{n['waits']} wait{'s' if n['waits'] != 1 else ''} ({', '.join(how)}), {stacked}")
        )
    elif n["offwake_stacks"]:
        views.append(
            _view(
                "stalls", "data", f"{n['offwake_stacks']} wake-up pairs from offwaketime (no waits: no ftrace capture)"
            )
        )
    elif ftrace:
        views.append(
            _view(
                "stalls",
                "empty",
                "no task waited: the capture has no sleep in scheduler events and no long call of a sleeping function",
            )
        )
    else:
        views.append(_view("stalls", "empty", "no ftrace capture: no waits"))

    # Timeline: tasks (scheduler events, calls), block devices, processes
    lanes = []
    if n["sched_switch"]:
        lanes.append("tasks running / runnable / blocked")
    if n["calls_with_task"] and n["call_times"]:
        lanes.append("calls per task")
    if n["calls_per_cpu"] and n["call_times"]:
        lanes.append("calls per CPU (task unknown)")
    if has_blk:
        lanes.append("block requests per device")
    if lanes:
        views.append(_view("timeline", "data", ", ".join(lanes)))
    elif n["calls"] and not n["call_times"]:
        views.append(_view("timeline", "empty", "the calls have no timestamps (funcgraph-abstime off): no time axis"))
    elif n["calls"]:
        views.append(_view("timeline", "empty", "the calls name no task (no funcgraph-proc column): no task lane"))
    elif formats - {"offcputime"}:
        views.append(_view("timeline", "empty", "no event on a clock"))

    # Dispatch: block requests
    if has_blk:
        timed = [f"{label} {n[f'requests_with_{m}']}" for m, label in BLOCK_PHASES if n[f"requests_with_{m}"]]
        gaps = _block_gaps(n)
        views.append(
            _view(
                "dispatch",
                "data" if timed else "empty",
                f"{n['block_requests']} block requests, timed: {', '.join(timed)}"
                + (f" ({'; '.join(why.split(':')[0] for _, why, _ in gaps)})" if gaps else "")
                if timed
                else f"{n['block_requests']} block requests, none timed: {'; '.join(why for _, why, _ in gaps)}",
            )
        )
    # Off-CPU: offcputime stacks
    if n["offcpu_stacks"]:
        views.append(_view("offcpu", "data", f"{n['offcpu_stacks']} off-CPU stack records"))
    views.append(_view("sources", "data", f"{len(sources)} source{'s' if len(sources) != 1 else ''}"))

    # what is missing, and how to capture it next time
    if ftrace:
        if not n["sched_switch"]:
            lack(
                "waits, who woke whom, runnable delay",
                "no sched_switch / sched_wakeup events: "
                + (
                    "waits are inferred from long calls of sleeping functions only"
                    if n["calls"]
                    else "the capture shows no sleep"
                ),
                f"{RECORD} {FUNCGRAPH if n['calls'] else ''} {SCHED} -T".replace("  ", " "),
            )
        elif not n["sched_wakeup"]:
            lack("who woke whom", "sched_switch without sched_wakeup/sched_waking events", f"{RECORD} {SCHED} -T")
        if n["waits"] and not n["waits_with_stack"]:
            lack(
                "the stacks of waits, and so their locks",
                "no function_graph calls and no stack-trace events",
                f"{RECORD} {SCHED} -T",
            )
        if not n["calls"]:
            lack(
                "function durations, calls around a wait, inferred lock holders",
                "no function_graph calls",
                f"{RECORD} {FUNCGRAPH} {SCHED} -T",
            )
        elif n["calls_per_cpu"]:
            lack(
                "calls per task",
                "function_graph lines without the task column (funcgraph-proc off)"
                + (
                    ", before their CPU's first context-switch marker (or on a CPU without one)"
                    if n["calls_with_task"]
                    else ""
                )
                + f": {n['calls_per_cpu']} calls are kept per CPU, as 'CPU n (task unknown)'",
                "echo 1 > /sys/kernel/tracing/options/funcgraph-proc (or trace-cmd record, whose report always names "
                "the task)",
            )
        if n["calls"] and not n["call_times"]:
            lack(
                "times of calls (timeline, heatmaps over time)",
                "function_graph lines without timestamps (funcgraph-abstime off)",
                "echo 1 > /sys/kernel/tracing/options/funcgraph-abstime",
            )
    else:
        lack(
            "waits: which task stalled, on which lock, who held it",
            "no ftrace capture",
            f"{RECORD} {FUNCGRAPH} {SCHED} -e block -T",
            own=False,
        )
    for gap in _block_gaps(n) if has_blk else ():
        lack(*gap)
    if not has_blk:
        lack(
            "block requests: time in the I/O scheduler (I→D) and the device (D→C)",
            "no blktrace capture"
            + (" (the ftrace capture's block events are not requests)" if n["ftrace_block_events"] else ""),
            "blktrace -d /dev/sdX -o - | blkparse -i - > trace.blkparse.txt",
            own=False,
        )
    if not n["offcpu_stacks"]:
        lack(
            "off-CPU flame graphs",
            "no offcputime capture",
            "offcputime -K -f 30 > offcpu.folded.txt",
            own=False,
        )
    lost = _overruns(sources) + _lost_ranges(con, analysis_id)
    # (said in `missing` and the views: not API fields)
    events = {k: v for k, v in n.items() if k != "calls_per_cpu" and not k.startswith("requests_with_")}
    return {"views": views, "missing": missing, "lost": lost, "events": events}
