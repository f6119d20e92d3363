"""The first views of an analysis: what its page's first requests answer, computed once the ingest has committed and
stored in the table `first_views` (queries/stored.py says how they are keyed, found and kept), by
`precompute` (through a RecordingCache of the AnalysisCache, backend/cache/).

Why at ingest: those answers depend only on the rows and the clock offsets, and computing them takes seconds for
millions of events (on the 18.5 M-event benchmark analysis: the heatmap 2.0 s, the flame graph 1.8 s, the
capabilities' counts, the timeline 0.9 s...); computed at a tab's first load after a server start, beside the
warm-up computing the same on 2 cores, they made that load take 3.6-6.1 s. Stored, a server start has nothing to
compute: the first requests read bytes.

Why after the commit, not in the ingest's transaction: the timeline's summaries are committed by a transaction of
their own during the derivation (derive/pipeline.py), which the ingest's transaction, begun before, does not see.
Each view is computed by the very function its route calls, with the route's parameters as the frontend asks them
(FIRST, compared with the frontend's sources by tests/test_warm.py), through a RecordingCache: so the stored answer
is, byte for byte, what the route would compute (tests/test_first_views.py). They are computed on PARALLEL
cursors at once (each view's queries leave a core idle part of their time: ~1.5 cores busy on 2), then stored in one
transaction (a commit per view cost ~10 ms each). At the end of a 1 GiB ingest they take ~0.9 CPU-s (blkparse, 2 M
requests) and ~0.8 (function_graph, 12 M lines), the heatmap, the dispatch summary and the latency over time, then
the lost events' ranges and the timeline the largest.

A view that fails is reported and left out: its request computes it. The warm-up (backend/warm.py) precomputes the
views an analysis lacks (a file written before the table existed); a PATCH of a clock offset deletes its timed views
and precomputes them again.

Left to the warm-up (AT_INGEST): a heatmap of more events than an in-memory index holds (heatmaps.INDEX_MAX_EVENTS,
5 M) is read from the grid summary, whose build peaks at ~0.9 GiB for 24 M requests (a 5 GiB blkparse upload):
after an ingest whose own peak is up to ~0.8 GiB, in the same process, it would pass the ingest's 1 GiB. The
server builds it once, when the warm-up takes the new analysis (as every first load of Dispatch did before), and
stores the answer: later starts read it.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..memory import trim_heap
from . import capabilities, heatmaps, offcpu, requests, stalls, stored, timeline

if TYPE_CHECKING:
    from ..cache import AnalysisCache

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
    (
        "heatmap",
        lambda con, c, a: heatmaps.heatmap(con, c, a, FIRST["hm"], FIRST["HEATMAP_X_BINS"], FIRST["HEATMAP_Y_BINS"]),
    ),
    ("latency-over-time", lambda con, c, a: requests.latency_over_time(con, c, a, FIRST["LATENCY_BUCKETS"])),
    ("dispatch-summary", lambda con, c, a: requests.dispatch_summary(con, c, a, FIRST["by"])),
    ("requests-page", lambda con, c, a: requests.requests_page(con, c, a, FIRST["order"], FIRST["REQUESTS_LIMIT"])),
    (
        "timeline",
        lambda con, c, a: timeline.timeline_json(con, c, a, None, None, FIRST["TIMELINE_WIDTH_PX"], None, FIRST["tlN"]),
    ),
    ("capabilities", lambda con, c, a: capabilities.capabilities(con, c, a)),
    ("heatmap-metrics", lambda con, c, a: heatmaps.metrics(con, c, a, FIRST["heatmap metrics"])),
    ("chains", lambda con, c, a: stalls.first_chains(con, c, a, FIRST["chains"])),
    ("waits", lambda con, c, a: stalls.waits_page(con, c, a, "duration", FIRST["waits"])),
    ("marks", lambda con, c, a: stalls.marks(con, c, a, None, None, MARKS_LIMIT)),
    (
        "waits-heatmap",
        lambda con, c, a: heatmaps.heatmap(con, c, a, "wait", FIRST["HEATMAP_X_BINS"], FIRST["HEATMAP_Y_BINS"]),
    ),
    ("offcpu-tasks", lambda con, c, a: offcpu.tasks(con, c, a, FIRST["offcpu tasks"])),
    ("flamegraph", lambda con, c, a: offcpu.flamegraph_json(con, c, a)),
)


# STEPS as the ingest computes them: the flame graph first, alone, while DuckDB's buffers hold the least of the other
# views' reads: its build is the step's largest peak (+250 MiB for 100 k records, 20 k distinct stacks, over the memory
# when it starts); then the others, PARALLEL at once, the costliest first (so that the last to start are short): CPU
# seconds measured on the 1 GiB benchmark inputs (blkparse, function_graph) in the comments
ALONE = ("flamegraph",)
COSTLIEST_FIRST = (
    "heatmap",  # blkparse 0.22
    "capabilities",  # function_graph 0.30 (the lost events' ranges)
    "dispatch-summary",  # blkparse 0.26
    "latency-over-time",  # blkparse 0.16
    "timeline",  # function_graph 0.25, blkparse 0.04
    "heatmap-metrics",  # function_graph 0.09
    "waits-heatmap",  # function_graph 0.05
    "marks",  # function_graph 0.045
    "waits",  # function_graph 0.035
    "chains",  # function_graph 0.02
    "requests-page",
    "offcpu-tasks",
)
_RANK = {name: i for i, name in enumerate((*ALONE, *COSTLIEST_FIRST))}
INGEST_ORDER = tuple(sorted(STEPS, key=lambda step: _RANK.get(step[0], len(_RANK))))
# cursors computing views at once: the machine's 2 cores (DuckDB runs a query without holding the GIL, and a query
# of these uses both cores only part of its time: a scan of a few row groups, the Python that shapes its answer)
PARALLEL = 2

# steps computed at ingest only when this holds (the others by the warm-up: see the module's docstring)
AT_INGEST = {
    "heatmap": lambda con, c, a: heatmaps.indexable(con, c, a, FIRST["hm"], None),
    "waits-heatmap": lambda con, c, a: heatmaps.indexable(con, c, a, "wait", None),
}


def precompute(db, cache: AnalysisCache, analysis_id: str, names: tuple[str, ...] | None = None) -> dict[str, float]:
    """Computes the analysis' first views (it is committed) through a RecordingCache of `cache` on PARALLEL cursors
    (INGEST_ORDER, the flame graph alone first), then stores what they recorded in one transaction; returns the
    seconds each took. A view stored already is read, not computed again. All of them (after an ingest): those
    AT_INGEST allows; `names` (the warm-up's): these steps, whatever their size."""
    recording = cache.recording()
    seconds: dict[str, float] = {}
    steps = [step for step in INGEST_ORDER if names is None or step[0] in names]
    skip = AT_INGEST if names is None else {}
    alone = [step for step in steps if step[0] in ALONE]
    rest = [step for step in steps if step[0] not in ALONE]
    _compute(db, recording, analysis_id, alone, skip, seconds, threading.Lock())
    taking = threading.Lock()
    with ThreadPoolExecutor(PARALLEL, thread_name_prefix="stallscope-first-views") as pool:
        for done in [
            pool.submit(_compute, db, recording, analysis_id, rest, skip, seconds, taking) for _ in range(PARALLEL)
        ]:
            done.result()
    con = db.cursor()
    try:
        stored.store(con, recording.recorded)
    except Exception as e:  # their requests compute them, and report the error
        _report(analysis_id, "storing", e)
    finally:
        con.close()
    return {name: seconds[name] for name, _ in INGEST_ORDER if name in seconds}


def _compute(
    db, cache: AnalysisCache, analysis_id: str, steps: list, skip: dict, seconds: dict, taking: threading.Lock
) -> None:
    """Computes steps on a cursor of its own, taking each from the list (under `taking`: threads share it) until it
    is empty, but those whose `skip` condition does not hold; what they read is recorded by the (recording) cache."""
    con = db.cursor()
    try:
        while True:
            with taking:
                if not steps:
                    return
                name, call = steps.pop(0)
            t0 = time.perf_counter()
            try:
                if name in skip and not skip[name](con, cache, analysis_id):
                    continue
                call(con, cache, analysis_id)
                trim_heap()  # what the step freed, back to the OS before the next one's peak
            except Exception as e:  # its request computes it, and reports the error
                _report(analysis_id, name, e)
            seconds[name] = time.perf_counter() - t0
    finally:
        con.close()


def _report(analysis_id: str, name: str, e: Exception) -> None:
    print(
        f"stallscope: first views of analysis {analysis_id}: {name}: {type(e).__name__}: {e}",
        file=sys.stderr,
        flush=True,
    )
