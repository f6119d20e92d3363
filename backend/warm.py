"""Fills, in a background thread, what an analysis page's first requests would otherwise build (issue 6).

The first requests of a tab build per-process caches on first use (memo.py, heatindex.py): the Dispatch tab's
four at once took ~2 s after a server start on 2 cores (the heatmap index of 2 M requests ~0.9 s, the
latency-over-time chart ~0.5 s, the dispatch summary ~0.3 s), against ~1 s for every later load. The warmer
makes the same calls as those first requests (the parameters of frontend/src/api/tabQueries.ts and the views:
keep them equal), so the requests find the results kept:

* when the app starts, for the NEWEST most recently created analyses, newest first, stopping once either
  cache is half full (so that warming never evicts what it warmed);
* after an ingest, for the new analysis (first in line); after a source's clock offset changed, for its analysis
  (what was kept of it was dropped: it depended on the offsets).

One thread, one computation at a time, each started only once no request has been in flight for QUIET_S:
a request (or the upload of an ingest, until its response is sent) is never kept waiting for a computation it
does not need, and a request that needs the one under way waits for it instead of doing it again (memo and
heatindex compute a key once). Not a lower OS priority: such a request would then wait on a starved thread.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque

from .queries import analyses, heatindex, heatmaps, memo, offcpu, requests, stalls, timeline

NEWEST = 3
QUIET_S = 0.2

# the parameters of the frontend's first requests (keep them equal: tests/test_warm.py reads them from the frontend's
# sources): api/tabQueries.ts' constants, the default view's (state/viewState.ts), the limits of useChains,
# useHeatmapMetrics and the Stalls tab's WaitsPanel (api/queries.ts, views/stalls/WaitsPanel.tsx)
FIRST = {
    "HEATMAP_X_BINS": 120,
    "HEATMAP_Y_BINS": 40,
    "LATENCY_BUCKETS": 240,
    "REQUESTS_LIMIT": 100,
    "TIMELINE_WIDTH_PX": 1200,
    "hm": "i2d",
    "by": "process",
    "tlN": 40,
    "chains": 100,
    "heatmap metrics": 100,
    "waits": 100,
}

# (name, call) in the order they are warmed: Dispatch's first requests (the issue's), the timeline's, the Stalls
# tab's (the default tab with ftrace: heatmap choices, chains, waits), the off-CPU flame graph (its defaults)
STEPS = (
    ("heatmap", lambda con, a: heatmaps.heatmap(con, a, FIRST["hm"], FIRST["HEATMAP_X_BINS"], FIRST["HEATMAP_Y_BINS"])),
    ("latency-over-time", lambda con, a: requests.latency_over_time(con, a, FIRST["LATENCY_BUCKETS"])),
    ("dispatch-summary", lambda con, a: requests.dispatch_summary(con, a, FIRST["by"])),
    ("requests", lambda con, a: requests.requests(con, a, FIRST["hm"], FIRST["REQUESTS_LIMIT"])),
    ("timeline", lambda con, a: timeline.timeline(con, a, None, None, FIRST["TIMELINE_WIDTH_PX"], None, FIRST["tlN"])),
    ("heatmap-metrics", lambda con, a: heatmaps.metrics(con, a, FIRST["heatmap metrics"])),
    ("chains", lambda con, a: stalls.first_chains(con, a, FIRST["chains"])),
    ("waits", lambda con, a: stalls.first_waits(con, a, "duration", FIRST["waits"])),
    ("flamegraph", lambda con, a: offcpu.flamegraph_json(con, a)),
)


class Warmer:
    def __init__(self, store):
        self.store = store
        self._queue: deque[tuple[str, bool]] = deque()  # (analysis id, stop when the caches are half full)
        self._cv = threading.Condition()
        self._busy = 0  # requests in flight
        self._last = 0.0  # when the last one ended (monotonic)
        self._working = False
        self._stopping = False
        self._con = None
        self._thread: threading.Thread | None = None
        self.warmed: dict[str, dict[str, float]] = {}  # analysis id -> seconds per step, as warmed

    def start(self) -> None:
        """Starts the thread; it first queues the newest analyses."""
        self._working = True  # until the newest are queued
        self._thread = threading.Thread(target=self._run, name="stallscope-warm", daemon=True)
        self._thread.start()

    def add(self, analysis_id: str) -> None:
        """Warms this analysis next (after an ingest, or a change of a source's clock offset)."""
        with self._cv:
            self._queue.appendleft((analysis_id, False))
            self._cv.notify_all()

    def stop(self, timeout: float = 30) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
            if self._con is not None:
                self._con.interrupt()
        if self._thread is not None:
            self._thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until nothing is queued or under way; False on timeout."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._queue and not self._working, timeout)

    def began(self) -> None:
        with self._cv:
            self._busy += 1

    def ended(self) -> None:
        with self._cv:
            self._busy -= 1
            self._last = time.monotonic()
            self._cv.notify_all()

    def _quiet(self) -> bool:
        """Waits until no request has been in flight for QUIET_S; False: stopping."""
        with self._cv:
            while not self._stopping:
                quiet = time.monotonic() - self._last
                if not self._busy and quiet >= QUIET_S:
                    return True
                self._cv.wait(None if self._busy else QUIET_S - quiet)
            return False

    def _run(self) -> None:
        try:
            con = self.store.cursor()
            try:
                newest = analyses.newest(con, NEWEST)
            finally:
                con.close()
        except Exception as e:
            print(f"stallscope: warm-up: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            newest = []
        with self._cv:
            self._queue.extend((aid, True) for aid in newest)
        while True:
            with self._cv:
                self._working = False
                self._cv.notify_all()
                self._cv.wait_for(lambda: self._queue or self._stopping)
                if self._stopping:
                    return
                analysis_id, bounded = self._queue.popleft()
                self._working = True
            if not bounded or max(memo.used(), heatindex.used()) < 0.5:
                self._warm(analysis_id)

    def _warm(self, analysis_id: str) -> None:
        con = self.store.cursor()
        with self._cv:
            self._con = con
        seconds: dict[str, float] = {}
        try:
            for name, call in STEPS:
                if not self._quiet():
                    return
                t0 = time.perf_counter()
                call(con, analysis_id)
                seconds[name] = time.perf_counter() - t0
        except Exception as e:  # a failed step is computed again by its request, which reports the error
            if not self._stopping:
                print(
                    f"stallscope: warming analysis {analysis_id}: {name}: {type(e).__name__}: {e}",
                    file=sys.stderr,
                    flush=True,
                )
            return
        finally:
            with self._cv:
                self._con = None
            con.close()
        self.warmed[analysis_id] = seconds
        print(
            f"stallscope: warmed analysis {analysis_id} in {sum(seconds.values()):.1f} s ("
            + ", ".join(f"{k} {v:.2f}" for k, v in seconds.items())
            + ")",
            file=sys.stderr,
            flush=True,
        )


class CountRequests:
    """ASGI middleware: tells the warmer when requests begin and end (after their response is sent)."""

    def __init__(self, app, warmer: Warmer):
        self.app, self.warmer = app, warmer

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.warmer.began()
        try:
            await self.app(scope, receive, send)
        finally:
            self.warmer.ended()
