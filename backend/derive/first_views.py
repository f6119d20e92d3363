"""The first views of an analysis: what its page's first requests answer, computed once the ingest has committed and
stored in the table `first_views` (queries/stored.py says how they are keyed, found and kept).

Why at ingest: those answers depend only on the rows and the clock offsets, and computing them takes seconds for
millions of events (on the 18.5 M-event benchmark analysis: the heatmap 2.0 s, the flame graph 1.8 s, the
capabilities' counts, the timeline 0.9 s...); computed at a tab's first load after a server start, beside the
warm-up computing the same on 2 cores, they made that load take 3.6-6.1 s. Stored, a server start has nothing to
compute: the first requests read bytes.

Why after the commit, not in the ingest's transaction: the timeline's summaries are committed by a transaction of
their own during the derivation (derive/pipeline.py), which the ingest's transaction, begun before, does not see.
Each view is computed by the very function its route calls, with the route's parameters as the frontend asks them
(FIRST, compared with the frontend's sources by tests/test_warm.py), inside `stored.writing()`: so the stored
answer is, byte for byte, what the route would compute (tests/test_first_views.py).

A view that fails is reported and left out: its request computes it, as before this step existed. The warm-up
(backend/warm.py) stores the views an analysis lacks (a file written before the table existed, an analysis whose
clock offsets changed: the PATCH deletes its timed views).

Left to the warm-up (AT_INGEST): a heatmap of more events than an in-memory index holds (heatmaps.INDEX_MAX_EVENTS,
5 M) is read from the grid summary, whose build peaks at ~0.9 GiB for 24 M requests (a 5 GiB blkparse upload):
after an ingest whose own peak is up to ~0.8 GiB, in the same process, it would pass the ingest's 1 GiB. The
server builds it once, when the warm-up takes the new analysis (as every first load of Dispatch did before), and
stores the answer: later starts read it.
"""

from __future__ import annotations

import sys
import time

from ..ingest.memory import trim_heap
from ..queries import capabilities, heatmaps, offcpu, requests, stalls, stored, timeline

# the parameters of the frontend's first requests (keep them equal: tests/test_warm.py reads them from the frontend's
# sources): api/tabQueries.ts' constants, the default view's (state/viewState.ts), the limits of useChains,
# useHeatmapMetrics, offcpuTasksQuery and the Stalls tab's WaitsPanel (api/queries.ts, views/stalls/WaitsPanel.tsx)
FIRST = {
    "HEATMAP_X_BINS": 120,
    "HEATMAP_Y_BINS": 40,
    "LATENCY_BUCKETS": 240,
    "REQUESTS_LIMIT": 100,
    "TIMELINE_WIDTH_PX": 1200,
    "hm": "i2d",
    "by": "process",
    "order": "i2d",
    "tlN": 40,
    "chains": 100,
    "heatmap metrics": 100,
    "waits": 100,
    "offcpu tasks": 200,
}
MARKS_LIMIT = 1000  # /marks' default: the frontend's marksQuery asks without a limit

# (name, call), in the order the warm-up computes what an analysis lacks: Dispatch's first requests, the timeline's,
# the capabilities (every tab asks), the Stalls tab's (the default tab with ftrace: heatmap choices, chains, waits,
# marks, the waits' heatmap), the Off-CPU tab's (its tasks, the flame graph with its defaults)
STEPS = (
    ("heatmap", lambda con, a: heatmaps.heatmap(con, a, FIRST["hm"], FIRST["HEATMAP_X_BINS"], FIRST["HEATMAP_Y_BINS"])),
    ("latency-over-time", lambda con, a: requests.latency_over_time(con, a, FIRST["LATENCY_BUCKETS"])),
    ("dispatch-summary", lambda con, a: requests.dispatch_summary(con, a, FIRST["by"])),
    ("requests-page", lambda con, a: requests.requests_page(con, a, FIRST["order"], FIRST["REQUESTS_LIMIT"])),
    (
        "timeline",
        lambda con, a: timeline.timeline_json(con, a, None, None, FIRST["TIMELINE_WIDTH_PX"], None, FIRST["tlN"]),
    ),
    ("capabilities", lambda con, a: capabilities.capabilities(con, a)),
    ("heatmap-metrics", lambda con, a: heatmaps.metrics(con, a, FIRST["heatmap metrics"])),
    ("chains", lambda con, a: stalls.first_chains(con, a, FIRST["chains"])),
    ("waits", lambda con, a: stalls.waits_page(con, a, "duration", FIRST["waits"])),
    ("marks", lambda con, a: stalls.marks(con, a, None, None, MARKS_LIMIT)),
    (
        "waits-heatmap",
        lambda con, a: heatmaps.heatmap(con, a, "wait", FIRST["HEATMAP_X_BINS"], FIRST["HEATMAP_Y_BINS"]),
    ),
    ("offcpu-tasks", lambda con, a: offcpu.tasks(con, a, FIRST["offcpu tasks"])),
    ("flamegraph", lambda con, a: offcpu.flamegraph_json(con, a)),
)


# STEPS as the ingest computes them: the flame graph first, while DuckDB's buffers hold the least of the other views'
# reads: its build is the step's largest peak (+250 MiB for 100 k records, 20 k distinct stacks, over the memory when
# it starts)
INGEST_ORDER = sorted(STEPS, key=lambda step: step[0] != "flamegraph")

# steps computed at ingest only when this holds (the others by the warm-up: see the module's docstring)
AT_INGEST = {
    "heatmap": lambda con, a: heatmaps.indexable(con, a, FIRST["hm"], None),
    "waits-heatmap": lambda con, a: heatmaps.indexable(con, a, "wait", None),
}


def derive(db, analysis_id: str) -> dict[str, float]:
    """Computes and stores the analysis' first views (it is committed: each is stored in a statement of its own);
    returns the seconds each took."""
    con = db.cursor()
    seconds: dict[str, float] = {}
    try:
        with stored.writing():
            for name, call in INGEST_ORDER:
                t0 = time.perf_counter()
                try:
                    if name in AT_INGEST and not AT_INGEST[name](con, analysis_id):
                        continue
                    call(con, analysis_id)
                    trim_heap()  # what the step freed, back to the OS before the next one's peak
                except Exception as e:  # its request computes it, and reports the error
                    print(
                        f"stallscope: first views of analysis {analysis_id}: {name}: {type(e).__name__}: {e}",
                        file=sys.stderr,
                        flush=True,
                    )
                seconds[name] = time.perf_counter() - t0
    finally:
        con.close()
    return seconds
