"""Every table and view the backend derives, in one place: their definitions (DDL) and the constants that say how
their rows are laid out.

`analyses` and `sources` (CORE_SCHEMA) say which rows make which analysis, `edit_keys` who may change one. The parsers' tables (raw events, keyed
by source_id) are defined by each parser's Arrow schemas (`TABLES`, with `GENERATED` columns and `VIEWS`:
parsers/blkparse.py, funcgraph.py, offcpu.py; PARSER_TABLES names them) and created by schema/create.py. Everything
derived from them is here (SCHEMA): `blk_top`, the waits and chains (stored as `wait_rows` / `chain_link_rows`, read
through the views `waits`, `stall_waits`, `chain_links`), the timeline's task slices and summaries, and the answers
of an analysis page's first requests (`first_views`, queries/first_views.py). Older layouts are brought to these by
schema/migrations.py.
"""

from __future__ import annotations

from parsers import blkparse
from parsers.detect import PARSERS

# ---- analyses and their sources ------------------------------------------------------------------------------------

CORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS analyses (
    id VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL  -- UTC
);
CREATE SEQUENCE IF NOT EXISTS source_ids START 1;
CREATE TABLE IF NOT EXISTS sources (
    id INTEGER PRIMARY KEY,
    analysis_id VARCHAR NOT NULL,
    filename VARCHAR NOT NULL,
    format VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL,
    bytes BIGINT NOT NULL,
    lines BIGINT NOT NULL,
    events BIGINT NOT NULL,
    skipped_lines BIGINT NOT NULL,
    skipped_examples JSON NOT NULL,
    notes JSON NOT NULL,
    clock_offset_ns BIGINT NOT NULL DEFAULT 0,
    t_min_ns BIGINT,
    t_max_ns BIGINT,
    clock VARCHAR,                   -- the clock its times come from, when known
    alignment JSON,                  -- how clock_offset_ns was found (derive/align.py)
    files JSON                       -- the files it was read from (NULL: written before sources had it)
);
-- who may change an analysis (backend/access.py): its edit key's SHA-256, returned once at upload; none for an
-- analysis written before keys existed (only the token changes it on a shared server)
CREATE TABLE IF NOT EXISTS edit_keys (
    analysis_id VARCHAR PRIMARY KEY,
    key_sha256 VARCHAR NOT NULL
);
"""

# ---- the parsers' tables -------------------------------------------------------------------------------------------

# every parser's tables (each keyed by source_id), in the order of parsers.detect.PARSERS
PARSER_TABLES = tuple(dict.fromkeys(table for parser in PARSERS for table in parser.TABLES))

# ---- block requests ------------------------------------------------------------------------------------------------

REQUEST_COLUMNS = [
    "source_id",
    "line",
    "dev",
    "sector",
    "nsect",
    "rwbs",
    "pid",
    "comm",
    "q_ns",
    "g_ns",
    "i_ns",
    "d_ns",
    "c_ns",
    "q2g_ns",
    "g2i_ns",
    "i2d_ns",
    "d2c_ns",
    "q2c_ns",
    "error",
    "merged_bios",
    "requeues",
    "from_dev",
    "from_sector",
]
# the block tables' time columns (a source's own time: the analysis timeline adds its clock offset)
TIMES = frozenset({"a_ns", "q_ns", "g_ns", "i_ns", "d_ns", "c_ns", "t_ns", "merge_ns"})


def aligned_by(columns, off: str, alias: str = "r", times=TIMES) -> str:
    """A SELECT list of the columns of `alias`, those among `times` moved by the offset expression `off`."""
    return ", ".join(f"{alias}.{c} + {off} AS {c}" if c in times else f"{alias}.{c}" for c in columns)


TOP = blkparse.TOP  # requests kept per source and metric in blk_top: /requests?order=i2d|d2c|q2c&limit<=TOP reads them
TOP_METRICS = ("i2d", "d2c", "q2c")

BLK_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS blk_top AS  -- per source and metric, its TOP slowest requests (times: the source's own)
    SELECT ''::VARCHAR AS metric, {", ".join(REQUEST_COLUMNS)} FROM blk_requests LIMIT 0;
"""

# ---- waits and chains (derive/waits.py, derive/chains.py) -----------------------------------------------------------

# A stack is stored as its frames joined by STACK_SEP and read as a list: DuckDB inserts and logs (WAL) one string per
# stack for less than half the cost of a list of ~25 (the 60 k waits of the benchmark's function_graph trace, inserted
# and committed: 0.4 s against 0.85 s). A frame never holds the separator (a control character; the tokenizer's
# function names are tokens without it). The rows are stored in wait_rows and chain_link_rows; `waits` and
# `chain_links` are views that add the lists (not virtual columns: DuckDB computes those on every INSERT, 0.3 s of
# the 0.5 s that inserting those 60 k waits took).
STACK_SEP = "\x1f"
_STACK = "CASE WHEN {c}_text = '' THEN []::VARCHAR[] ELSE string_split({c}_text, chr(31)) END AS {c}"
WAITS_COLUMNS = """
    source_id INTEGER NOT NULL,
    line BIGINT NOT NULL,            -- the line that starts the wait: the switch-out, or the call's entry
    kind VARCHAR NOT NULL,           -- sched | call
    pid BIGINT NOT NULL,
    comm VARCHAR,
    cpu INTEGER,
    start_ns BIGINT NOT NULL,
    end_ns BIGINT NOT NULL,          -- the trace's last timestamp when end_known is false
    duration_ns BIGINT NOT NULL,     -- for a call wait that returned: the call's own duration field
    end_known BOOLEAN NOT NULL,
    end_line BIGINT,                 -- the switch-in, wake-up or call exit that ends it
    state VARCHAR,                   -- prev_state of the switch-out; null for a call wait
    lock VARCHAR,
    lock_key VARCHAR,                -- what is locked, for grouping waiters: the object (xfs_ilock), else lock
    primitive VARCHAR,               -- locks.py entry behind lock, null when lock is only the innermost frame
    stack_text VARCHAR NOT NULL,     -- root first (the view's `stack`)
    inferred BOOLEAN NOT NULL,
    evidence VARCHAR NOT NULL,
    waker_pid BIGINT,
    waker_comm VARCHAR,
    waker_stack_text VARCHAR,
    wake_line BIGINT,
    wake_ns BIGINT,
    wake_cpu INTEGER,
    holder_pid BIGINT,
    holder_comm VARCHAR,
    holder_line BIGINT,              -- the holder's acquire call (its entry line)
    holder_ns BIGINT,                -- ... and when it returned
    holder_evidence VARCHAR,
    holder_stack_text VARCHAR,       -- the holder's calls open when this wait began
    wait_kind VARCHAR,               -- why it waited (backend/wait_kinds.py): lock | io | memory | task | idle | other
    wait_rule VARCHAR                -- ... the rule of wait_kinds.RULES that says so
"""
CHAIN_LINKS_COLUMNS = """
    analysis_id VARCHAR NOT NULL,
    chain_id INTEGER NOT NULL,
    pos INTEGER NOT NULL,            -- 0 = the stalled task
    source_id INTEGER NOT NULL,
    wait_line BIGINT,                -- the link's wait (waits.line), null for the running task that ends a chain
    pid BIGINT,
    comm VARCHAR,
    lock VARCHAR,
    start_ns BIGINT,
    end_ns BIGINT,
    duration_ns BIGINT,
    end_known BOOLEAN,
    relation VARCHAR,                -- to the next link: woken_by | held_by | io_completion; null at the end
    inferred BOOLEAN NOT NULL,
    evidence VARCHAR NOT NULL,
    stack_text VARCHAR NOT NULL,
    line BIGINT,
    also_waiting JSON NOT NULL,
    req_source_id INTEGER, req_line BIGINT, req_dev VARCHAR, req_sector BIGINT, req_nsect BIGINT,
    req_rwbs VARCHAR, req_pid BIGINT, req_comm VARCHAR, req_q_ns BIGINT, req_i_ns BIGINT, req_d_ns BIGINT,
    req_c_ns BIGINT
"""
STALLS_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS wait_rows ({WAITS_COLUMNS});
CREATE OR REPLACE VIEW waits AS
    SELECT *, {", ".join(_STACK.format(c=c) for c in ("stack", "waker_stack", "holder_stack"))} FROM wait_rows;
-- the waits that are stalls: all but idle ones (wait_kinds.py: a worker waiting for work, an RCU grace-period
-- thread, a poll, a futex, a nanosleep...); they are waits, not stalls
CREATE OR REPLACE VIEW stall_waits AS SELECT * FROM waits WHERE wait_kind IS DISTINCT FROM 'idle';
CREATE TABLE IF NOT EXISTS chains (
    analysis_id VARCHAR NOT NULL,
    chain_id INTEGER NOT NULL,       -- rank, 1 = longest stall of its first task
    duration_ns BIGINT NOT NULL,
    links INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chain_link_rows ({CHAIN_LINKS_COLUMNS});
CREATE OR REPLACE VIEW chain_links AS SELECT *, {_STACK.format(c="stack")} FROM chain_link_rows;
"""

# ---- the timeline's task slices and summaries (derive/timeline.py; read by queries/timeline/) -----------------------

MAX_CALL_DEPTH = 6  # tl_calls holds the calls of at most this depth
TRACKS = ("state", "wait", "call", "queued", "service")  # the track codes of tl_bins and of a lane's items
FAN = 4  # each level's bucket (tl_bins.level) is FAN times the one below
BLK_PHASES = ((3, "queued", "i_ns", "d_ns"), (4, "service", "d_ns", "c_ns"))  # track, state, start, end

TIMELINE_SCHEMA = """
CREATE TABLE IF NOT EXISTS task_slices (
    source_id INTEGER NOT NULL,
    pid BIGINT NOT NULL,
    comm VARCHAR,
    state VARCHAR NOT NULL,          -- running | runnable | blocked (off CPU asleep, until its wake-up)
    start_ns BIGINT NOT NULL,        -- the source's own clock
    end_ns BIGINT NOT NULL,
    line BIGINT NOT NULL,            -- the sched_switch / sched_wakeup line that began it
    end_known BOOLEAN NOT NULL       -- false: still so when the trace ends
);
-- the timeline's precomputed summaries (derive/timeline.py), in each source's own clock
CREATE TABLE IF NOT EXISTS tl_meta (source_id INTEGER NOT NULL, w0_ns BIGINT NOT NULL, top_level INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tl_lanes (
    source_id INTEGER NOT NULL, lane INTEGER NOT NULL, kind VARCHAR NOT NULL,  -- task | device | process | cpu
    pid BIGINT, dev VARCHAR, comm VARCHAR  -- a cpu lane: dev is the CPU's number
);
CREATE TABLE IF NOT EXISTS tl_bins (
    source_id INTEGER NOT NULL, level TINYINT NOT NULL, lane INTEGER NOT NULL, track TINYINT NOT NULL,
    state VARCHAR NOT NULL, bucket BIGINT NOT NULL,  -- [bucket * w, (bucket + 1) * w), w = w0_ns * FAN^level
    tot BIGINT NOT NULL, n BIGINT NOT NULL, mx BIGINT NOT NULL, line BIGINT NOT NULL  -- segments shorter than w
);
CREATE TABLE IF NOT EXISTS tl_long (  -- segments at least a level-1 bucket long; lvl: the first level longer than it
    source_id INTEGER NOT NULL, lvl TINYINT NOT NULL, lane INTEGER NOT NULL, track TINYINT NOT NULL,
    state VARCHAR NOT NULL, s BIGINT NOT NULL, e BIGINT NOT NULL, line BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS tl_depth (  -- requests in flight per device lane at the end of each level-0 bucket
    source_id INTEGER NOT NULL, lane INTEGER NOT NULL, bucket BIGINT NOT NULL, inflight BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS cpu_slices (  -- what ran on each CPU (derive/cpus.py), from each sched_switch
    source_id INTEGER NOT NULL,
    cpu INTEGER NOT NULL,
    pid BIGINT NOT NULL,             -- the switch's next task; 0: idle
    comm VARCHAR,
    start_ns BIGINT NOT NULL,        -- the switch (the source's own clock)
    end_ns BIGINT NOT NULL,          -- the next switch on that CPU, else the source's end
    line BIGINT NOT NULL,            -- the sched_switch line
    end_known BOOLEAN NOT NULL       -- false: still running when the trace ends
);
CREATE TABLE IF NOT EXISTS tl_calls (  -- calls of depth <= MAX_CALL_DEPTH at least w0_ns long
    source_id INTEGER NOT NULL, pid BIGINT, depth INTEGER NOT NULL, func VARCHAR, entry_ns BIGINT NOT NULL,
    end_ns BIGINT NOT NULL, duration_ns BIGINT NOT NULL, line BIGINT NOT NULL
);
"""
# summarize's tables, each keyed by source_id: it may write and commit them before the analysis (its sources rows)
# is committed, in a transaction of its own; until then no read joins them, and a failed ingest deletes them
STAGED_TABLES = ("task_slices", "tl_meta", "tl_lanes", "tl_bins", "tl_long", "tl_depth", "tl_calls", "cpu_slices")

# ---- the first views: what an analysis page's first requests answer (queries/first_views.py, queries/stored.py) ------

FIRST_VIEWS_SCHEMA = """
CREATE TABLE IF NOT EXISTS first_views (
    analysis_id VARCHAR NOT NULL,
    key VARCHAR NOT NULL,            -- JSON: [what, its parameters..., if timed the offsets [[source id, ns], ...]]
    timed BOOLEAN NOT NULL,          -- holds aligned times or chains: depends on the clock offsets
    body BLOB NOT NULL               -- the answer as computed: JSON text (a flame graph: the route's body)
);
"""

# ---- derive steps a migration left to run over a file's kept rows (schema/migrations.py marks them) --------------

PENDING_DERIVE_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending_derive (
    step VARCHAR PRIMARY KEY         -- a name of derive/pipeline.DERIVE_MIGRATED: run when the file is next opened
);
"""

SCHEMA = BLK_SCHEMA + STALLS_SCHEMA + TIMELINE_SCHEMA + FIRST_VIEWS_SCHEMA + PENDING_DERIVE_SCHEMA
