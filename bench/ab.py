"""Checkouts compared in the same run: the ingest and API parts of `make bench`, interleaved.

    python -m bench.ab NAME=CHECKOUT NAME=CHECKOUT... [--parts ingest,api] [--rounds 3] [--api-routes TEXT]

Each CHECKOUT is a tree of this repository (a git worktree of some commit) with its C extensions built; the first is
the reference. The inputs are those of `make bench` (bench.inputs, scaled by the same BENCH_* variables), generated
once into bench-out/ here; each checkout's bench-out/ is made a link to it.

* ingest: each round runs, for every input, one ingest per checkout (`python -m bench.ingest` in a fresh process
  with that checkout's code: its directory is the working directory), the checkouts' order turning by one every
  round, so that none is always first after a pause or last in a busy minute. Wall and CPU seconds, peak RSS
  (wait4) and the CPU check of bench.run (SHA-256 MB/s) before each run.
* api: one process per checkout, each with its own analysis of the three inputs (ingested by that checkout's code)
  and the app started as `stallscope serve` starts it (warm-up done), all alive at once; the routes and parameters
  of bench.api, each call made to every process in turn (order turning), so that a busy second slows each the same.
  Per route: p50/p95 per checkout and the median of the per-call ratios to the reference; each process' peak RSS.

Results: bench-out/ab.json and stdout (markdown).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import inputs
from bench.inputs import OUT


def link_out(checkout: Path) -> None:
    """checkout/bench-out -> this run's bench-out/ (the same inputs, bytes for bytes)."""
    out = checkout / "bench-out"
    target = OUT.resolve()
    if out.resolve() == target:  # the link, or this run's own bench-out/
        return
    if out.exists() or out.is_symlink():
        raise SystemExit(f"{out} exists: remove it so that it can be a link to {target}")
    out.symlink_to(target, target_is_directory=True)


def ingest_once(checkout: Path, path: Path) -> dict:
    db = OUT / "ab-ingest.duckdb"
    for p in (db, Path(str(db) + ".wal")):
        p.unlink(missing_ok=True)
    inputs.cached(path)
    check = inputs.cpu_check()
    cmd = [sys.executable, "-m", "bench.ingest", str(path.resolve()), str(db.resolve())]
    result, wall, rss_kib, cpu = run_measured_in(checkout, cmd)
    out = {
        "seconds": result["seconds"],
        "process_seconds": wall,
        "cpu_seconds": cpu,
        "peak_rss_mib": rss_kib / 1024,
        "db_bytes": db.stat().st_size,
        "events": result["events"],
        "cpu_check_mb_s": check,
        "load": inputs.loadavg(),
    }
    for p in (db, Path(str(db) + ".wal")):
        p.unlink(missing_ok=True)
    return out


def run_measured_in(checkout: Path, cmd: list[str]) -> tuple[dict, float, int, float]:
    """bench.inputs.run_measured with the checkout as working directory (`python -m` puts it first on sys.path: the
    checkout's code is what runs)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=checkout, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(cmd)} in {checkout} failed with exit code {os.waitstatus_to_exitcode(status)}")
    return json.loads(out), wall, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


# run in each checkout's process (its code: the working directory comes first on sys.path): builds its analysis of
# the inputs once, starts the app, then answers one JSON request per line of stdin with the call's milliseconds
SERVE = r"""
import json, os, sys, time, warnings
warnings.filterwarnings("ignore", message=".*httpx.*")
from fastapi.testclient import TestClient
from backend.app import create_app
from backend.store import InputFile, Store
db, paths = sys.argv[1], sys.argv[2:]
store = Store(db)
t0 = time.perf_counter()
files = [open(p, "rb") for p in paths]
created = store.ingest([InputFile(os.path.basename(p), f, os.path.getsize(p)) for p, f in zip(paths, files)])
ingest_s = time.perf_counter() - t0
aid = created["id"]
with TestClient(create_app(store), base_url="http://127.0.0.1") as client:
    t0 = time.perf_counter()
    client.app.state.warmer.wait()
    info = client.get(f"/api/analyses/{aid}").json()
    print(json.dumps({"ingest_seconds": ingest_s, "warm_up_seconds": time.perf_counter() - t0,
                      "t_min_ns": info["t_min_ns"], "t_max_ns": info["t_max_ns"]}), flush=True)
    for line in sys.stdin:
        q = json.loads(line)
        t0 = time.perf_counter()
        r = client.get(f"/api/analyses/{aid}/{q['route']}", params=q["params"])
        ms = (time.perf_counter() - t0) * 1000
        print(json.dumps({"ms": ms, "status": r.status_code, "bytes": len(r.content)}), flush=True)
store.close()
"""


def api_interleaved(checkouts: dict[str, Path], calls: int, only: str = "", warmup: int = 2) -> dict:
    from bench import api as bench_api

    paths = [str(p.resolve()) for p in (inputs.blkparse(), inputs.funcgraph(), inputs.offcpu())]
    procs, started = {}, {}
    for name, checkout in checkouts.items():
        db = (OUT / f"ab-api-{name}.duckdb").resolve()
        for p in (db, Path(str(db) + ".wal")):
            p.unlink(missing_ok=True)
        print(f"api: {name} ingests the three inputs...", file=sys.stderr, flush=True)
        procs[name] = subprocess.Popen(
            [sys.executable, "-c", SERVE, str(db), *paths],
            cwd=checkout,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started[name] = json.loads(procs[name].stdout.readline())  # one at a time: the ingests do not overlap
    spans = {(s["t_min_ns"], s["t_max_ns"]) for s in started.values()}
    if len(spans) != 1:
        raise SystemExit(f"the checkouts' analyses differ in span: {spans}")
    t_min, t_max = spans.pop()
    names = list(checkouts)
    result = {"started": started, "routes": {}}
    try:
        for route, path, params in bench_api.routes("-", t_min, t_max):
            if only and only not in route:
                continue
            print(f"api: {route}...", file=sys.stderr, flush=True)
            rng = random.Random(f"{bench_api.SEED}:{route}")
            each = {n: [] for n in names}
            for i in range(warmup + calls):
                q = json.dumps({"route": path.rsplit("/", 1)[-1], "params": params(rng, i)})
                for name in names[i % len(names) :] + names[: i % len(names)]:
                    procs[name].stdin.write(q + "\n")
                    procs[name].stdin.flush()
                    answer = json.loads(procs[name].stdout.readline())
                    if answer["status"] != 200:
                        raise SystemExit(f"{name}: {route} {q} -> {answer['status']}")
                    if i >= warmup:
                        each[name].append(answer)
            result["routes"][route] = each
        for name, proc in procs.items():
            status = Path(f"/proc/{proc.pid}/status").read_text()
            started[name]["peak_rss_mib"] = int(status.split("VmHWM:")[1].split()[0]) / 1024
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()
    return result


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def report(result: dict) -> str:
    names = list(result["checkouts"])
    first = names[0]
    lines = []
    if result["ingest"]:
        lines += [
            "### Ingest (each run a fresh process and database)",
            "",
            "| input | checkout | wall s, median (range) | ratio to " + first + " | CPU s, median (range) | ratio | "
            "peak RSS MiB, median (range) | ratio | DuckDB MiB |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for fmt, by in result["ingest"].items():
            base = {k: statistics.median(r[k] for r in by[first]) for k in ("seconds", "cpu_seconds", "peak_rss_mib")}
            for name in names:
                runs = by[name]
                med = {k: statistics.median(r[k] for r in runs) for k in base}
                lines.append(
                    f"| {fmt} | {name} | {spread([r['seconds'] for r in runs])} | {med['seconds'] / base['seconds']:.3f}"
                    f" | {spread([r['cpu_seconds'] for r in runs])} | {med['cpu_seconds'] / base['cpu_seconds']:.3f}"
                    f" | {spread([r['peak_rss_mib'] for r in runs], '{:.0f}')}"
                    f" | {med['peak_rss_mib'] / base['peak_rss_mib']:.3f}"
                    f" | {statistics.median(r['db_bytes'] for r in runs) / 2**20:.0f} |"
                )
        checks = [r["cpu_check_mb_s"] for by in result["ingest"].values() for runs in by.values() for r in runs]
        loads = [r["load"] for by in result["ingest"].values() for runs in by.values() for r in runs]
        lines += [
            "",
            f"CPU check before each ingest: {spread(checks, '{:.0f}')} MB/s; 1-minute load average at the end of each"
            f" run: {spread(loads, '{:.1f}')}.",
            "",
        ]
    if result["api"]:
        api = result["api"]
        lines += [
            "### API (one process per checkout, each call made to every process in turn)",
            "",
            "| route | "
            + " | ".join(f"{n} p50 / p95 ms" for n in names)
            + " | per-call ratio to "
            + first
            + ", median |",
            "|---|" + "---:|" * len(names) + "---:|",
        ]
        for route, each in api["routes"].items():
            cells = []
            for n in names:
                ms = sorted(c["ms"] for c in each[n])
                cells.append(f"{statistics.median(ms):.1f} / {ms[max(0, -(-95 * len(ms) // 100) - 1)]:.1f}")
            ratios = ", ".join(
                f"{n} {statistics.median(b['ms'] / a['ms'] for a, b in zip(each[first], each[n])):.2f}"
                for n in names[1:]
            )
            lines.append(f"| `{route}` | {' | '.join(cells)} | {ratios} |")
        started = api["started"]
        lines += [
            "",
            "Per checkout: three-input analysis ingest s, warm-up s, the process' peak RSS MiB: "
            + "; ".join(
                f"{n} {started[n]['ingest_seconds']:.1f}, {started[n]['warm_up_seconds']:.1f},"
                f" {started[n]['peak_rss_mib']:.0f}"
                for n in names
            )
            + ".",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs="+", metavar="NAME=CHECKOUT")
    ap.add_argument("--parts", default="ingest,api")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--api-routes", default="", help="only the API routes whose name holds this text")
    args = ap.parse_args(argv)
    checkouts = {}
    for item in args.checkouts:
        name, _, path = item.partition("=")
        checkouts[name] = Path(path).resolve()
    parts = set(args.parts.split(","))
    OUT.mkdir(exist_ok=True)
    for path in checkouts.values():
        link_out(path)
    files = {"blkparse": inputs.blkparse(), "ftrace": inputs.funcgraph(), "offcputime": inputs.offcpu()}
    result = {
        "checkouts": {n: str(p) for n, p in checkouts.items()},
        "machine": inputs.machine(),
        "ingest": {},
        "api": {},
    }
    names = list(checkouts)
    for k in range(args.rounds):
        order = names[k % len(names) :] + names[: k % len(names)]
        if "ingest" in parts:
            for fmt, path in files.items():
                for name in order:
                    print(f"round {k + 1}: ingest {path.name} with {name}...", file=sys.stderr, flush=True)
                    runs = result["ingest"].setdefault(fmt, {n: [] for n in names})[name]
                    runs.append(ingest_once(checkouts[name], path))
        (OUT / "ab.json").write_text(json.dumps(result, indent=1))
    if "api" in parts:
        result["api"] = api_interleaved(checkouts, int(os.environ.get("BENCH_API_CALLS", "50")), args.api_routes)
        (OUT / "ab.json").write_text(json.dumps(result, indent=1))
    print(report(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
