"""Fills, in a background thread, what an analysis page's requests would otherwise build (issues 6 and 25).

An analysis' first views (what its page's first requests answer) are stored at ingest (queries/first_views.py), so
after a server start a tab's first load reads them (ms) instead of computing them (seconds, on 2 cores, beside the
other tabs' first loads: 3.6-6.1 s on the 18.5 M-event benchmark analysis before they were stored). What is left
to a warm-up, per analysis, in two phases:

1. the first views (queries/first_views.STEPS, the same calls as the routes, one step at a time through
   first_views.precompute): where they are stored, each is read into memory (a few ms); where not (a file
   written before they were, an analysis whose clock offset changed: the PATCH deleted its timed views), it is
   computed and stored. Each step starts once no request has been in flight for QUIET_S.
2. what the requests after the first ones build, in memory only (INDEXES: the heatmaps' index of each first view,
   the timeline's summaries, every chain built for the Stalls view's windows): a zoom of the Dispatch heatmap on
   2 M requests took 4.7 s without its index, the timeline's first zoom 1.6 s without its summaries (measured on
   the benchmark analysis, load ~11). Each starts only once no request has been in flight for INDEX_QUIET_S: long
   enough that a page's first loads, each tab's requests and the browser's drawing (about a second on 2 cores), do
   not share the CPU with it.

Queued: when the app starts, the NEWEST most recently created analyses, newest first, stopping once either cache is
half full (so that warming never evicts what it warmed); after an ingest, the new analysis (first in line); after a
source's clock offset changed, its analysis.

One thread, one computation at a time: a request (or the upload of an ingest, until its response is sent) is never
kept waiting for a computation it does not need, and a request that needs the one under way waits for it instead
of doing it again (the AnalysisCache computes a key once). Not a lower OS priority: such a request would then wait
on a starved thread.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque

from .cache import AnalysisCache
from .queries import analyses, first_views, heatmaps, stall_windows, timeline
from .queries.first_views import FIRST, STEPS

NEWEST = 3
QUIET_S = 0.2
INDEX_QUIET_S = 3.0

# (name, call): phase 2, what the first views' routes read from for any other window (the zooms), kept in memory
INDEXES = (
    ("heatmap index", lambda con, c, a: heatmaps.prepare(con, c, a, FIRST["hm"])),
    ("waits heatmap index", lambda con, c, a: heatmaps.prepare(con, c, a, "wait")),
    (
        "timeline summaries",
        lambda con, c, a: timeline.timeline(con, c, a, None, None, FIRST["TIMELINE_WIDTH_PX"], None, FIRST["tlN"]),
    ),
    ("every chain", lambda con, c, a: stall_windows.built_chains(con, c, a)),  # the first view builds its own only
)


class Warmer:
    def __init__(self, store, cache: AnalysisCache):
        self.store, self.cache = store, cache
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

    def _quiet(self, seconds: float) -> bool:
        """Waits until no request has been in flight for `seconds`; False: stopping."""
        with self._cv:
            while not self._stopping:
                quiet = time.monotonic() - self._last
                if not self._busy and quiet >= seconds:
                    return True
                self._cv.wait(None if self._busy else seconds - quiet)
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
            if not bounded or self.cache.used() < 0.5:
                self._warm(analysis_id)

    def _warm(self, analysis_id: str) -> None:
        con = self.store.cursor()
        with self._cv:
            self._con = con
        seconds: dict[str, float] = {}
        try:
            for name, _ in STEPS:  # phase 1: what the analysis lacks is computed and stored
                if not self._quiet(QUIET_S):
                    return
                t0 = time.perf_counter()
                first_views.precompute(self.store.db, self.cache, analysis_id, (name,))
                seconds[name] = time.perf_counter() - t0
            for name, call in INDEXES:  # phase 2: kept in memory only
                if not self._quiet(INDEX_QUIET_S):
                    return
                t0 = time.perf_counter()
                call(con, self.cache, analysis_id)
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
