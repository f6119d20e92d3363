"""Where an ingest's CPU time goes, stage by stage (issue 27, drop to view): one ingest as `Store.ingest` runs it for
an upload (without the HTTP receive), in this process, each stage's CPU seconds (the process', so every thread's:
the parser's, DuckDB's, the hash thread's) and wall seconds.

    python -m bench.stages FILE... [--db DB]     (several files: one upload, such as a blktrace per-CPU set)

Stages, in the order they run: the parser alone (a first pass over the file, nothing stored: what staging's share
of parsing is), staging (parse, the inserts beside it, the SHA-256), each source's derive steps, each analysis
derive step, the commit, the first views (first_views.precompute, as an upload runs it), the close (its checkpoint). What is
left of the ingest's CPU (detection, the sources rows) is "the rest". The stages are found by wrapping the
functions that run them for the length of the run. Prints a markdown table and JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from backend import db
from backend import store as store_module
from backend.cache import AnalysisCache
from backend.ingest import pipeline
from backend.queries import first_views
from backend.store import InputFile, Store
from bench.ingest import own_peak_kib, parse_only


def cpu_seconds() -> float:
    """This process' CPU time, every thread's."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Stages:
    """CPU and wall seconds per stage name, summed over the calls timed under it."""

    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = {}

    @contextmanager
    def timed(self, name: str):
        c0, t0 = cpu_seconds(), time.perf_counter()
        try:
            yield
        finally:
            got = self.seconds.setdefault(name, [0.0, 0.0])
            got[0] += cpu_seconds() - c0
            got[1] += time.perf_counter() - t0

    def wrapped(self, name: str, fn):
        def run(*args, **kwargs):
            with self.timed(name):
                return fn(*args, **kwargs)

        return run


def step_name(fn) -> str:
    return f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"


@contextmanager
def patched(obj, attr: str, value):
    old = getattr(obj, attr)
    setattr(obj, attr, value)
    try:
        yield
    finally:
        setattr(obj, attr, old)


@contextmanager
def derive_steps_wrapped(per_source, per_analysis):
    """The ingest's derive steps (pipeline.DERIVE_SOURCE's, DERIVE_ANALYSIS) each replaced by per_source(step) or
    per_analysis(step) for the block, and put back after it (the lists are the ingest's own: changed in place)."""
    source = {fmt: list(steps) for fmt, steps in pipeline.DERIVE_SOURCE.items()}
    analysis = list(pipeline.DERIVE_ANALYSIS)
    try:
        for fmt, steps in source.items():
            pipeline.DERIVE_SOURCE[fmt][:] = [per_source(s) for s in steps]
        pipeline.DERIVE_ANALYSIS[:] = [per_analysis(s) for s in analysis]
        yield
    finally:
        for fmt, steps in source.items():
            pipeline.DERIVE_SOURCE[fmt][:] = steps
        pipeline.DERIVE_ANALYSIS[:] = analysis


class TimedCommits(db.Connection):
    """The Store's connection (backend/db.Connection), its cursors timing their commit() under "commit" (the
    ingest's transaction)."""

    def __init__(self, conn: db.Connection, stages: Stages):
        super().__init__(conn.raw, conn.deadlines)
        self._stages = stages

    def cursor(self) -> db.Connection:
        return _CommitTimingCursor(self.raw.cursor(), self.deadlines, self._stages)


class _CommitTimingCursor(db.Connection):
    def __init__(self, raw, deadlines: db.Deadlines, stages: Stages):
        super().__init__(raw, deadlines)
        self._stages = stages

    def commit(self):
        with self._stages.timed("commit"):
            return self.raw.commit()


def measure(paths: list[Path], db: Path) -> dict:
    """One ingest of `paths` (the files of one upload) stage by stage, after their parser alone."""
    c0 = cpu_seconds()
    alone = {**parse_only([str(p) for p in paths]), "cpu_seconds": cpu_seconds() - c0}
    stages = Stages()
    for p in (db, Path(str(db) + ".wal")):
        p.unlink(missing_ok=True)
    store = Store(db)
    with ExitStack() as patches:
        patches.enter_context(patched(pipeline, "stage_source", stages.wrapped("staging", pipeline.stage_source)))
        patches.enter_context(
            derive_steps_wrapped(
                lambda s: stages.wrapped(f"derive, per source: {step_name(s)}", s),
                lambda s: stages.wrapped(f"derive: {step_name(s)}", s),
            )
        )
        ingest = store_module.ingest  # the ingest's own connection times its commit (the first views' does not)
        patches.enter_context(
            patched(store_module, "ingest", lambda conn, *args, **kw: ingest(TimedCommits(conn, stages), *args, **kw))
        )
        files = [patches.enter_context(open(p, "rb")) for p in paths]
        with stages.timed("ingest"):
            created = store.ingest([InputFile(p.name, f, p.stat().st_size) for p, f in zip(paths, files)])
            with stages.timed("first views"):  # as an upload does, once the ingest has committed
                first_views.precompute(store.db, AnalysisCache(), created["id"])
    with stages.timed("close (checkpoint)"):
        store.close()
    secs = stages.seconds
    ingest_cpu, ingest_wall = secs.pop("ingest")
    inner = sum(c for name, (c, _) in secs.items() if name != "close (checkpoint)")
    secs["the rest of the ingest"] = [ingest_cpu - inner, None]  # (its wall time is not one stretch)
    sources = created["sources"]
    return {
        "file": ", ".join(p.name for p in paths),
        "bytes": sum(p.stat().st_size for p in paths),
        "format": ", ".join(sorted({src["format"] for src in sources})),
        "sources": len(sources),
        "lines": sum(src["lines"] for src in sources),
        "parser_alone": {"cpu_seconds": alone["cpu_seconds"], "seconds": alone["seconds"]},
        "ingest": {"cpu_seconds": ingest_cpu, "seconds": ingest_wall},
        "stages": {k: {"cpu_seconds": c, "seconds": w} for k, (c, w) in secs.items()},
        "load": os.getloadavg()[0],
        "vmhwm_mib": own_peak_kib() / 1024,
        "db_mib": db.stat().st_size / 2**20,
    }


def table(r: dict) -> str:
    gib = r["bytes"] / 2**30
    rows = [
        f"{r['file']} ({gib:.2f} GiB, {r['lines']:,} lines), load {r['load']:.1f}",
        "",
        "| stage | CPU s | CPU s per GiB | share of the ingest's CPU | wall s |",
        "|---|---:|---:|---:|---:|",
    ]
    total = r["ingest"]["cpu_seconds"]
    pa = r["parser_alone"]
    rows.append(
        f"| (the parser alone, before: not part of the ingest) | {pa['cpu_seconds']:.2f} | "
        f"{pa['cpu_seconds'] / gib:.2f} | | {pa['seconds']:.2f} |"
    )
    for name, s in r["stages"].items():
        share = f"{100 * s['cpu_seconds'] / total:.0f} %" if name != "close (checkpoint)" else "(after)"
        wall = "" if s["seconds"] is None else f"{s['seconds']:.2f}"
        rows.append(f"| {name} | {s['cpu_seconds']:.2f} | {s['cpu_seconds'] / gib:.2f} | {share} | {wall} |")
    rows.append(f"| **the ingest** | **{total:.2f}** | **{total / gib:.2f}** | 100 % | {r['ingest']['seconds']:.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", type=Path, nargs="+", help="the files of one upload")
    ap.add_argument("--db", type=Path, default=None, help="the database to write (default: a temporary file)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="stallscope-stages-") as tmp:
        result = measure(a.files, a.db or Path(tmp) / "stages.duckdb")
    print(table(result))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
