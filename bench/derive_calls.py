"""The derive's critical path (issue 36, drop to view): one ingest as `Store.ingest` runs it, then its first views, with
each derive call's start and end on one time line, per thread (the derive's reader, inserter, builders and this one:
backend/derive/pipeline.py says what runs beside what). What waits for what shows as a thread's gap.

    python -m bench.derive_calls FILE [FILE...]

Several files are one upload (a blktrace per-CPU set). Prints, from the derive's first call: start s, end s, seconds,
thread, call, the process' resident memory at most while it ran (sampled every 10 ms); then the derive's CPU and
wall seconds, each first view's seconds and the process' peak.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from backend.cache import AnalysisCache
from backend.derive import (
    chain_plan,
    chains,
    cpus,
    pipeline,
    recorded,
    stacks,
    timeline,
    waits,
)
from backend.queries import first_views
from backend.store import InputFile, Store
from bench.ingest import own_peak_kib
from bench.stages import cpu_seconds, derive_steps_wrapped, patched, step_name

# the calls timed: module, its functions (looked up where pipeline.py calls them: as module attributes)
CALLS = (
    (waits, ("function_names", "stage", "holder_finder", "find_stacks", "finish")),
    (stacks, ("call_index",)),
    (recorded, ("stack_owners", "event_stacks")),
    (timeline, ("prepare", "summarize")),
    (cpus, ("summarize",)),
    (chain_plan, ("plan",)),
    (chains, ("stored_rows", "build_chains", "match_requests", "insert_chains")),
    (pipeline, ("_insert_waits",)),
)


class CallLog:
    """(start, end, thread, name) of each call timed; the derive's CPU seconds."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float, str, str]] = []
        self.derive_cpu = 0.0
        self._lock = threading.Lock()

    def wrapped(self, name: str, fn, cpu: bool = False):
        def run(*args, **kwargs):
            c0, t0 = cpu_seconds(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self.calls.append((t0, time.perf_counter(), threading.current_thread().name, name))
                    if cpu:
                        self.derive_cpu += cpu_seconds() - c0

        return run


class RssSamples:
    """This process' resident memory every STEP seconds, in a thread of its own, while it runs (a context manager):
    what each call's span saw at most (`peak_mib`)."""

    STEP = 0.01

    def __init__(self) -> None:
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss-samples", daemon=True)
        self._page = os.sysconf("SC_PAGE_SIZE")

    def _sample(self) -> None:
        with open("/proc/self/statm", "rb") as statm:
            while not self._stop.wait(self.STEP):
                statm.seek(0)
                self.samples.append((time.perf_counter(), int(statm.read().split()[1]) * self._page))

    def __enter__(self) -> RssSamples:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def peak_mib(self, start: float, end: float) -> float:
        """The most seen from `start` to `end`; for a call shorter than a step, the last sample before its end."""
        seen = [rss for t, rss in self.samples if start <= t <= end]
        if not seen:
            seen = [rss for t, rss in self.samples if t <= end][-1:]
        return max(seen, default=0) / (1 << 20)


def measure(paths: list[Path], db: Path) -> dict:
    log = CallLog()
    store = Store(db)
    rss = RssSamples()
    with ExitStack() as patches:
        for module, names in CALLS:
            for name in names:
                fn = getattr(module, name)
                patches.enter_context(patched(module, name, log.wrapped(step_name(fn), fn)))
        derive_steps = [*(f for s in pipeline.DERIVE_SOURCE.values() for f in s), *pipeline.DERIVE_ANALYSIS]

        def timed(step):
            return log.wrapped(step_name(step), step, cpu=True)

        patches.enter_context(derive_steps_wrapped(timed, timed))
        files = [patches.enter_context(open(p, "rb")) for p in paths]
        patches.enter_context(rss)
        t0 = time.perf_counter()
        created = store.ingest([InputFile(p.name, f, p.stat().st_size) for p, f in zip(paths, files)])
        ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    views = first_views.precompute(store.db, AnalysisCache(), created["id"])
    views_s = time.perf_counter() - t0
    store.close()
    start = min(c[0] for c in log.calls)
    derive = [c for c in log.calls if c[3] in {step_name(f) for f in derive_steps}]
    return {
        "files": [p.name for p in paths],
        "ingest_seconds": ingest_s,
        "derive_seconds": max(c[1] for c in derive) - min(c[0] for c in derive),
        "derive_cpu_seconds": log.derive_cpu,
        "calls": [(a - start, b - start, thread, name, rss.peak_mib(a, b)) for a, b, thread, name in sorted(log.calls)],
        "first_views_seconds": views_s,
        "first_views": views,
        "vmhwm_mib": own_peak_kib() / 1024,
    }


def table(r: dict) -> str:
    rows = [
        f"{', '.join(r['files'])}: ingest {r['ingest_seconds']:.2f} s",
        "",
        "| start s | end s | s | thread | call | RSS at most, MiB |",
    ]
    rows.append("|---:|---:|---:|---|---|---:|")
    rows += [
        f"| {a:.2f} | {b:.2f} | {b - a:.2f} | {thread} | {name} | {peak:.0f} |"
        for a, b, thread, name, peak in r["calls"]
    ]
    views = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["first_views"].items(), key=lambda kv: -kv[1]))
    rows += [
        "",
        f"derive: {r['derive_seconds']:.2f} s wall, {r['derive_cpu_seconds']:.2f} CPU s (every thread's)",
        f"first views: {r['first_views_seconds']:.2f} s ({views})",
        f"peak: {r['vmhwm_mib']:.0f} MiB",
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", type=Path, nargs="+")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="stallscope-derive-calls-") as tmp:
        print(table(measure(args.files, Path(tmp) / "calls.duckdb")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
