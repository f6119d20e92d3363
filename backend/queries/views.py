"""The documented views of an analysis: what the SQL console queries and what the exports write.

Each view is one SELECT over the stored tables, restricted to one analysis (`$aid`), with the names and units of the
API: every time is in ns on the analysis timeline (the source's own time + its clock offset), stacks are lists of
frames, root first. `VIEWS` lists them in the order the SQL console's editor shows them; `stacks` is defined over
`waits` (so the SQL console's copy of an analysis stores it as a view, not as rows).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..block_layers import REQUEST_SOURCES
from ..schema.tables import REQUEST_COLUMNS, aligned_by

_OFF = "s.clock_offset_ns"
_IN_ANALYSIS = "JOIN sources s ON s.id = {a}.source_id WHERE s.analysis_id = $aid"
# the block requests an analysis shows (as /requests): its blktraces', else those an ftrace source rebuilt
_REQUESTS_SHOWN = _IN_ANALYSIS + f" AND {REQUEST_SOURCES}"


def _cols(alias: str, columns: list[str], times: set[str]) -> str:
    return aligned_by(columns, _OFF, alias, times)


_REQUEST_TIMES = {"a_ns", "q_ns", "g_ns", "i_ns", "d_ns", "c_ns"}
_REQUEST_SELECT = [
    *REQUEST_COLUMNS[:8],
    "a_ns",
    *REQUEST_COLUMNS[8:],
    "a_line",
    "q_line",
    "g_line",
    "i_line",
    "d_line",
    "c_line",
    "d_pid",
]

_WAIT_COLUMNS = [
    "source_id", "line", "kind", "pid", "comm", "cpu", "start_ns", "end_ns", "duration_ns", "end_known", "end_line",
    "state", "lock", "primitive", "stack", "inferred", "evidence", "waker_pid", "waker_comm", "waker_stack",
    "wake_line", "wake_ns", "wake_cpu", "holder_pid", "holder_comm", "holder_line", "holder_ns", "holder_evidence",
    "holder_stack", "wait_kind", "wait_rule",
]  # fmt: skip

STACKS_OVER = """
SELECT w.source_id, w.line AS wait_line, f.side, f.depth, f.frame FROM {waits} w,
LATERAL (
    SELECT 'task' AS side, generate_subscripts(w.stack, 1) - 1 AS depth, unnest(w.stack) AS frame
    UNION ALL SELECT 'waker', generate_subscripts(w.waker_stack, 1) - 1, unnest(w.waker_stack)
    WHERE w.waker_stack IS NOT NULL
    UNION ALL SELECT 'holder', generate_subscripts(w.holder_stack, 1) - 1, unnest(w.holder_stack)
    WHERE w.holder_stack IS NOT NULL
) f
"""


@dataclass(frozen=True)
class View:
    name: str
    about: str
    sql: str  # over the stored tables, for the analysis $aid
    over_waits: bool = False  # defined over the `waits` view (STACKS_OVER): a view in the SQL console's copy


VIEWS: tuple[View, ...] = (
    View(
        "requests",
        "block requests rebuilt from blktrace (as /requests): phase times, I2D/D2C/Q2C (ns), each phase's line",
        f"SELECT {_cols('r', _REQUEST_SELECT, _REQUEST_TIMES)} FROM blk_requests r {_REQUESTS_SHOWN.format(a='r')}",
    ),
    View(
        "bios",
        "bios merged into a request (req_line: the request's line; front: a front merge)",
        "SELECT b.source_id, b.line, b.dev, b.sector, b.nsect, b.rwbs, b.pid, b.comm, b.a_ns + s.clock_offset_ns AS"
        " a_ns, b.a_line, b.q_ns + s.clock_offset_ns AS q_ns, b.q_line, b.q_cpu, b.merge_ns + s.clock_offset_ns AS"
        f" merge_ns, b.merge_line, b.front, b.from_dev, b.from_sector, b.req_line FROM blk_bios b"
        f" {_REQUESTS_SHOWN.format(a='b')}",
    ),
    View(
        "events",
        "blktrace events that are not a request's phase: plugs, unplugs, splits, remaps, scheduler messages"
        " (action 'm', message), with the request they belong to (req_line)",
        "SELECT e.source_id, e.line, e.dev, e.cpu, e.t_ns + s.clock_offset_ns AS t_ns, e.pid, e.action, e.rwbs,"
        " e.sector, e.nsect, e.elapsed_ns, e.error, e.comm, e.from_dev, e.from_sector, e.split_sector, e.depth,"
        f" e.message, e.req_line FROM blk_events e {_REQUESTS_SHOWN.format(a='e')}",
    ),
    View(
        "waits",
        "intervals a task was off CPU blocked (as /waits?idle=true): lock, stack, waker, inferred holder; wait_kind"
        " and wait_rule: why (/api/wait-kinds); idle: an idle wait (not a stall, left out of /waits by default)",
        f"SELECT {_cols('w', _WAIT_COLUMNS, {'start_ns', 'end_ns', 'wake_ns', 'holder_ns'})},"
        " w.wait_kind = 'idle' AS idle"
        f" FROM waits w {_IN_ANALYSIS.format(a='w')}",
    ),
    View(
        "chains",
        "chains of waits (as /chains): id = rank, 1 = the longest stall of a first task; links: how many",
        "SELECT c.chain_id AS id, c.duration_ns, c.links FROM chains c WHERE c.analysis_id = $aid",
    ),
    View(
        "links",
        "the links of the chains, pos 0 = the stalled task; relation to the next link; req_*: the block request"
        " an io_completion link ends in",
        "SELECT l.chain_id, l.pos, l.source_id, l.wait_line, l.pid, l.comm, l.lock, l.start_ns + s.clock_offset_ns"
        " AS start_ns, l.end_ns + s.clock_offset_ns AS end_ns, l.duration_ns, l.end_known, l.relation, l.inferred,"
        " l.evidence, l.stack, l.line, l.req_source_id, l.req_line, l.req_dev, l.req_sector, l.req_nsect, l.req_rwbs,"
        " l.req_pid, l.req_comm, l.req_q_ns + r.clock_offset_ns AS req_q_ns, l.req_i_ns + r.clock_offset_ns AS"
        " req_i_ns, l.req_d_ns + r.clock_offset_ns AS req_d_ns, l.req_c_ns + r.clock_offset_ns AS req_c_ns"
        " FROM chain_links l JOIN sources s ON s.id = l.source_id LEFT JOIN sources r ON r.id = l.req_source_id"
        " WHERE l.analysis_id = $aid AND s.analysis_id = $aid",
    ),
    View(
        "calls",
        "function_graph calls (as /calls): entry and exit (ns), duration_ns from the trace, depth, partial",
        "SELECT c.source_id, c.line, c.pid, c.comm, c.cpu, c.depth, c.func, c.entry_ns + s.clock_offset_ns AS"
        " entry_ns, c.exit_ns + s.clock_offset_ns AS exit_ns, c.duration_ns, c.parent_line, c.partial, c.exit_line"
        f" FROM fg_calls c {_IN_ANALYSIS.format(a='c')}",
    ),
    View(
        "tasks",
        "each task's states from the scheduler events: running, runnable, blocked (start_ns..end_ns)",
        "SELECT t.source_id, t.pid, t.comm, t.state, t.start_ns + s.clock_offset_ns AS start_ns, t.end_ns +"
        f" s.clock_offset_ns AS end_ns, t.line, t.end_known FROM task_slices t {_IN_ANALYSIS.format(a='t')}",
    ),
    View(
        "stacks",
        "the frames of every wait's stacks, one row each: side task | waker | holder, depth 0 = the root",
        STACKS_OVER,
        over_waits=True,
    ),
    View(
        "offcpu_stacks",
        "offcputime / offwaketime stacks: frames root first (kernel_frames of them the kernel's), the waker's,"
        " value_us (µs off CPU, or a count where the dump gave none)",
        "SELECT o.source_id, o.line, o.kind, o.comm, o.pid, o.tid, o.frames, o.kernel_frames, o.waker_comm,"
        f" o.waker_pid, o.waker_frames, o.value_us, o.incomplete FROM offcpu_stacks o {_IN_ANALYSIS.format(a='o')}",
    ),
    View(
        "sched_switch",
        "ftrace sched_switch events",
        "SELECT x.source_id, x.line, x.t_ns + s.clock_offset_ns AS t_ns, x.cpu, x.prev_comm, x.prev_pid,"
        " x.prev_prio, x.prev_state, x.next_comm, x.next_pid, x.next_prio FROM sched_switch x"
        f" {_IN_ANALYSIS.format(a='x')}",
    ),
    View(
        "sched_wakeup",
        "ftrace sched_wakeup / sched_wakeup_new / sched_waking events",
        "SELECT x.source_id, x.line, x.t_ns + s.clock_offset_ns AS t_ns, x.cpu, x.event, x.waker_pid, x.waker_comm,"
        f" x.pid, x.comm, x.prio, x.target_cpu, x.success FROM sched_wakeup x {_IN_ANALYSIS.format(a='x')}",
    ),
    View(
        "trace_events",
        "every other ftrace event, as text (event: its name; print = trace_marker)",
        "SELECT x.source_id, x.line, x.t_ns + s.clock_offset_ns AS t_ns, x.cpu, x.pid, x.comm, x.event, x.text"
        f" FROM trace_events x {_IN_ANALYSIS.format(a='x')}",
    ),
    View(
        "sources",
        "the analysis' sources: format, size, events, skipped lines, clock offset; t_min_ns/t_max_ns aligned",
        "SELECT s.id, s.filename, s.format, s.sha256, s.bytes, s.lines, s.events, s.skipped_lines,"
        " s.clock_offset_ns, s.clock, s.t_min_ns + s.clock_offset_ns AS t_min_ns, s.t_max_ns + s.clock_offset_ns"
        " AS t_max_ns FROM sources s WHERE s.analysis_id = $aid",
    ),
)
BY_NAME = {v.name: v for v in VIEWS}


def select(view: View) -> str:
    """The view's SELECT over the stored tables (parameter $aid)."""
    if view.over_waits:
        return view.sql.format(waits=f"({BY_NAME['waits'].sql})")
    return view.sql
