"""`make bench`: the benchmark of a 10 M-event analysis, in four parts, each in processes of its own.

    python -m bench.run [--parts ingest,api,server,page,load] [--reuse]

1. ingest (here): each generated input (bench.inputs: blkparse, 2 M requests = 10.46 M lines; a trace-cmd
   report of 10 M function_graph/sched lines; a bcc offcputime dump of 100 k records) is ingested
   BENCH_INGEST_RUNS times (3) by `python -m bench.ingest`, each run in a fresh process into a fresh database:
   lines/s from the first byte read to the commit, with everything the views need derived; peak memory is
   that process' maximum resident set (wait4); DuckDB file size per million events; before each run a CPU check
   (this VM's speed changes from minute to minute) and, during it, the CPU time stolen by the hypervisor.
   bench-out/ingest.json.
1b. binary (bench.binary): a blktrace per-CPU set of 10 M records and its blkparse text, each ingested in the same
   run, alternately: bytes/s, events/s and their ratio. bench-out/binary.json.
2. api (bench.api): p50/p95/max latency and JSON size of the UI's routes on one analysis of all three
   inputs. bench-out/api.json. --reuse keeps its database if it was built from the same files.
3. server (bench.server): uploads of 1, 2.5 and 5 GiB of each format (BENCH_SERVER_GIB) to `stallscope serve`:
   drop to view against the bare transfer, the server's peak RSS per size (its table by size: flat or not), the
   database's size, and the routes of bench.api on the largest uploads' analyses (bench.bigapi).
   bench-out/server.json.
4. page (bench.page): the analysis page ready in headless Chromium (Playwright). bench-out/page.json.
5. load (bench.load): GET latency of an analysis page's routes from 30 readers while 6 uploaders POST traces,
   60 s against `stallscope serve`. bench-out/load.json.
6. perf_script (bench.perf_script): perf script text parsed by the C reader and by the Python reader it replaced, same
   inputs, same run: lines/s of CPU and their ratio. bench-out/perf_script.json.

Every part prints its markdown table; at the end all of them are printed again together, with the machine
and the load average seen during each part (the runs share the cores with whatever else runs), and
written to bench-out/summary.md (bench-out/run.json: the load averages).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from bench import baselines, inputs
from bench.inputs import OUT, run_measured

PARTS = ("ingest", "binary", "api", "server", "page", "load", "perf_script")
INGEST_RUNS = int(os.environ.get("BENCH_INGEST_RUNS", "3"))
PART_TIMEOUT_S = 3 * 3600
# the parser issues' targets: lines/s (None: none set) and peak memory of an ingest
INGEST_TARGETS = {"blkparse": 2.0e6, "ftrace": 1.0e6, "offcputime": None}
INGEST_PEAK_TARGET_MIB = 1024
# issue 27: the ingest's speed against DuckDB's bulk read of the same file into split columns, same run
VS_DUCKDB_TARGETS = {"blkparse": 3.0, "ftrace": 2.0, "offcputime": None}


def ingest(path: Path, runs: int) -> dict:
    each, parse = [], []  # full ingests; the parser alone (bench.ingest --parse-only), interleaved
    db = OUT / "bench-ingest.duckdb"
    try:
        for i in range(runs):
            for p in (db, Path(str(db) + ".wal")):
                p.unlink(missing_ok=True)
            print(f"ingest {path.name}: run {i + 1} of {runs} (and the parser alone)...", file=sys.stderr, flush=True)
            inputs.cached(path)
            check, steal = inputs.cpu_check(), inputs.steal_seconds()
            result, wall, rss_kib, cpu = run_measured([sys.executable, "-m", "bench.ingest", str(path), str(db)])
            result.update(
                process_seconds=wall,
                cpu_seconds=cpu,
                peak_rss_mib=rss_kib / 1024,
                db_bytes=db.stat().st_size,
                load=inputs.loadavg(),
                cpu_check_mb_s=check,
                steal_seconds=inputs.steal_seconds() - steal,
            )
            # the same file's baselines, right after (bench/baselines.py): ratios that survive a noisy machine
            base = baselines.measure(path)
            result.update(
                wc_l_seconds=base["wc_l"]["seconds"],
                duckdb_seconds=base["duckdb"]["seconds"],
                vs_duckdb=base["duckdb"]["seconds"] / result["seconds"],
                vs_wc_l=base["wc_l"]["seconds"] / result["seconds"],
            )
            each.append(result)
            inputs.cached(path)
            result, wall, rss_kib, cpu = run_measured([sys.executable, "-m", "bench.ingest", str(path), "--parse-only"])
            result.update(process_seconds=wall, cpu_seconds=cpu, peak_rss_mib=rss_kib / 1024, load=inputs.loadavg())
            parse.append(result)
    finally:
        for p in (db, Path(str(db) + ".wal")):
            p.unlink(missing_ok=True)
    best = min(each, key=lambda r: r["seconds"])
    speeds = sorted(r["lines"] / r["seconds"] for r in each)
    return {
        "file": path.name,
        "lines": best["lines"],
        "events": best["events"],
        "bytes": best["bytes"],
        "runs": each,
        "best_seconds": best["seconds"],
        "best_process_cpu_seconds": best["cpu_seconds"],
        "best_process_seconds": best["process_seconds"],
        "best_lines_s": best["lines"] / best["seconds"],
        "best_cpu_check_mb_s": best["cpu_check_mb_s"],
        "cpu_check_mb_s": [r["cpu_check_mb_s"] for r in each],
        "steal_seconds": [r["steal_seconds"] for r in each],
        "median_lines_s": speeds[len(speeds) // 2],
        "min_lines_s": speeds[0],
        "vs_duckdb": [r["vs_duckdb"] for r in each],
        "vs_wc_l": [r["vs_wc_l"] for r in each],
        "best_vs_duckdb": max(r["vs_duckdb"] for r in each),
        "peak_rss_mib_max": max(r["peak_rss_mib"] for r in each),
        "peak_rss_mib_min": min(r["peak_rss_mib"] for r in each),
        "parse_runs": parse,
        "parse_best_lines_s": max(r["lines"] / r["seconds"] for r in parse),
        "parse_peak_rss_mib_max": max(r["peak_rss_mib"] for r in parse),
        "db_bytes": best["db_bytes"],
        "db_mib_per_million_events": best["db_bytes"] / 2**20 / (best["events"] / 1e6),
    }


def ingest_part() -> dict:
    files = {
        "blkparse": inputs.blkparse_real(inputs.REQUESTS),
        "ftrace": inputs.funcgraph(),
        "offcputime": inputs.offcpu(),
    }
    formats = {}
    for fmt, path in files.items():
        r = ingest(path, INGEST_RUNS)
        target = INGEST_TARGETS[fmt]
        r["target_lines_s"] = target
        r["pass_lines_s"] = None if target is None else r["best_lines_s"] >= target
        r["pass_peak"] = r["peak_rss_mib_max"] < INGEST_PEAK_TARGET_MIB
        r["target_vs_duckdb"] = VS_DUCKDB_TARGETS[fmt]
        formats[fmt] = r
    result = {"machine": inputs.machine(), "runs_per_format": INGEST_RUNS, "formats": formats}
    (OUT / "ingest.json").write_text(json.dumps(result, indent=1))
    print("\n## Ingest per format\n\n" + ratio_table(result) + "\n\n" + ingest_table(result), flush=True)
    return result


def ratio_table(result: dict) -> str:
    """Ratios first: each run's ingest against the same file's baselines measured right after it."""
    rows = [
        "| format | input | × DuckDB bulk read into columns, best (all runs) | median | target | × `wc -l` (all runs) |",
        "|---|---|---:|---:|---|---:|",
    ]
    for fmt, r in result["formats"].items():
        if "vs_duckdb" not in r:
            continue
        t = r.get("target_vs_duckdb")
        verdict = "none" if t is None else f"≥ {t:g}×: {'PASS' if r['best_vs_duckdb'] >= t else '**MISS**'}"
        median = sorted(r["vs_duckdb"])[len(r["vs_duckdb"]) // 2]  # each run's pair can fall in a busier minute
        rows.append(
            f"| {fmt} | {r['file']} | **{r['best_vs_duckdb']:.2f}×** "
            f"({', '.join(f'{v:.2f}' for v in r['vs_duckdb'])}) | {median:.2f}× | {verdict} | "
            f"{', '.join(f'{v:.3f}' for v in r['vs_wc_l'])} |"
        )
    return "\n".join(rows) + (
        "\n\n× = the baseline's seconds / the ingest's seconds on the same file (> 1: the ingest is faster). DuckDB"
        " bulk read: read_csv of the lines, split on whitespace into 8 columns, written to a fresh database"
        " (bench/baselines.py)."
    )


def ingest_table(result: dict) -> str:
    rows = [
        f"| format | input | ingest, best of {result['runs_per_format']} | M lines/s best (median) | target | "
        "process wall / CPU s | peak RSS (max of runs) | < 1 GiB | parser alone: M lines/s, peak | "
        "CPU check, MB/s: best run (all runs); steal s |",
        "|---|---|---:|---:|---|---:|---:|---|---:|---|",
    ]
    for fmt, r in result["formats"].items():
        t = r["target_lines_s"]
        verdict = "no target" if t is None else f"≥ {t / 1e6:.0f} M: {'PASS' if r['pass_lines_s'] else '**MISS**'}"
        rows.append(
            f"| {fmt} | {r['file']}: {r['lines']:,} lines, {r['bytes'] / 2**20:,.0f} MiB | "
            f"{r['best_seconds']:.2f} s | **{r['best_lines_s'] / 1e6:.2f}** "
            f"({r['median_lines_s'] / 1e6:.2f}) | "
            f"{verdict} | {r['best_process_seconds']:.1f} / {r['best_process_cpu_seconds']:.1f} | "
            f"{r['peak_rss_mib_max']:.0f} MiB | {'PASS' if r['pass_peak'] else '**MISS**'} | "
            f"{r['parse_best_lines_s'] / 1e6:.2f}, {r['parse_peak_rss_mib_max']:.0f} MiB | "
            f"{r['best_cpu_check_mb_s']:.0f} ({', '.join(f'{v:.0f}' for v in r['cpu_check_mb_s'])}); "
            f"{', '.join(f'{v:.1f}' for v in r['steal_seconds'])} |"
        )
    return "\n".join(rows) + (
        "\n\nCPU check: MB/s of SHA-256 over 32 MiB (best of three), measured just before each ingest run: this VM's"
        " speed changes from minute to minute, and a run in a slow minute is slower for that alone. Steal: CPU"
        " seconds the hypervisor gave to other guests during each run (/proc/stat)."
    )


def db_table(ingest: dict | None, api: dict | None) -> str:
    rows = ["| database | events | DuckDB file | MiB per million events |", "|---|---:|---:|---:|"]
    for fmt, r in (ingest or {}).get("formats", {}).items():
        rows.append(
            f"| {fmt} alone ({r['file']}) | {r['events']:,} | {r['db_bytes'] / 2**20:.0f} MiB | "
            f"{r['db_mib_per_million_events']:.1f} |"
        )
    if api:
        rows.append(
            f"| the API analysis (all three) | {api['events']:,} | {api['db_bytes'] / 2**20:.0f} MiB | "
            f"**{api['db_mib_per_million_events']:.1f}** |"
        )
    return "\n".join(rows)


def code_version() -> dict:
    """The commit measured, and the files of the working tree that differ from it (the benchmark measures the tree)."""

    def git(*args):
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    dirty = [
        ln[3:]
        for ln in git("status", "--porcelain", "--untracked-files=no").splitlines()
        if ln[3:].startswith(("backend/", "parsers/", "frontend/src/"))
    ]
    return {
        "commit": git("rev-parse", "--short=10", "HEAD"),
        "subject": git("log", "-1", "--format=%s")[:100],
        "uncommitted": dirty,
    }


def code_line(v: dict) -> str:
    out = f"commit {v['commit']}"
    if v["uncommitted"]:
        out += f" with uncommitted changes to {', '.join(v['uncommitted'])}"
    return out


class LoadSampler(threading.Thread):
    """The 1-minute load average every 2 s, to say how busy the machine was during each part."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.values: list[float] = []

    def run(self) -> None:
        while True:
            v = inputs.loadavg()
            if not math.isnan(v):
                self.values.append(v)
            if self.stop.wait(2.0):
                return


def run_part(part: str, reuse: bool) -> None:
    if part == "ingest":
        ingest_part()
        return
    if part == "binary":
        from bench import binary

        print("\n## blktrace binary vs its blkparse text\n\n" + binary.table(binary.compare()), flush=True)
        return
    cmd = [sys.executable, "-m", f"bench.{part}"] + (["--reuse"] if part == "api" and reuse else [])
    subprocess.run(cmd, check=True, timeout=PART_TIMEOUT_S)


def summary(parts: list[str], loads: dict, started: str, m: dict, code: dict) -> str:
    def load(part):
        v = loads.get(part)
        return f" (load average {v['min']:.1f}–{v['max']:.1f}, mean {v['mean']:.1f})" if v else ""

    def read(name):
        p = OUT / f"{name}.json"
        return json.loads(p.read_text()) if name in parts and p.exists() else None

    from bench import api as api_mod
    from bench import page as page_mod
    from bench import server as server_mod

    out = [f"# make bench, {started}", "", f"Machine: {inputs.machine_line(m)}.", "", f"Code: {code_line(code)}.", ""]
    ing, api, srv, page = read("ingest"), read("api"), read("server"), read("page")
    if ing:
        out += [f"## Ingest per format{load('ingest')}", "", ratio_table(ing), "", ingest_table(ing), ""]
    if binary_result := read("binary"):
        from bench import binary

        out += [f"## blktrace binary vs its blkparse text{load('binary')}", "", binary.table(binary_result), ""]
    if api:
        out += [
            f"## API on the {api['events'] / 1e6:.1f} M-event analysis{load('api')}",
            "",
            api_mod.describe_analysis(api) + ".",
            "",
            api_mod.warm_line(api),
            "",
            f"{api['calls_per_route']} calls per route after {api['warmup_calls']} warm-up calls.",
            "",
            api_mod.table(api),
            "",
            "Worst cases:",
            "",
            api_mod.worst_cases(api),
            "",
        ]
    if ing or api:
        out += ["## DuckDB file size per million events", "", db_table(ing, api), ""]
    if srv:
        out += [
            f"## Upload: drop to view against the bare transfer, and server memory{load('server')}",
            "",
            server_mod.table(srv),
            "",
            "### Peak memory by upload size (VmHWM; ≤ 1 GiB whatever the size)",
            "",
            server_mod.peak_table(srv),
            "",
        ]
        if (views := srv.get("largest_views")) and views.get("text"):
            out += ["### The largest uploads' views (bench/api.py's routes on their analyses)", "", views["text"], ""]
    if page:
        out += [
            f"## Analysis page ready in headless Chromium ({page['browser']}, {page['runs']} cold loads per "
            f"tab){load('page')}",
            "",
            page_mod.table(page),
            "",
        ]
    if load_result := read("load"):
        from bench import load as load_mod

        out += [
            f"## Reads under ingest: 6 uploaders, 30 readers, 60 s{load('load')}",
            "",
            load_mod.table(load_result),
            "",
        ]
    if perf_result := read("perf_script"):
        from bench import perf_script

        out += [
            f"## perf script text: the C reader vs the Python reader{load('perf_script')}",
            "",
            perf_script.table(perf_result),
            "",
        ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    ap.add_argument("--reuse", action="store_true", help="bench.api: keep bench-out/api.duckdb if it fits")
    a = ap.parse_args(argv)
    parts = [p.strip() for p in a.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        ap.error(f"unknown part(s) {', '.join(unknown)}; choose among {', '.join(PARTS)}")
    OUT.mkdir(exist_ok=True)
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    m = inputs.machine()
    code = code_version()
    print(f"machine: {inputs.machine_line(m)}; load average now {inputs.loadavg():.2f}", file=sys.stderr, flush=True)
    loads: dict[str, dict] = {}
    for part in parts:
        sampler = LoadSampler()
        sampler.start()
        t0 = time.perf_counter()
        try:
            run_part(part, a.reuse)
        finally:
            sampler.stop.set()
            sampler.join(5)
        v = sampler.values or [float("nan")]
        loads[part] = {"min": min(v), "max": max(v), "mean": sum(v) / len(v), "seconds": time.perf_counter() - t0}
    (OUT / "run.json").write_text(
        json.dumps({"started": started, "machine": m, "code": code, "parts": parts, "load": loads}, indent=1)
    )
    text = summary(parts, loads, started, m, code)
    (OUT / "summary.md").write_text(text + "\n")
    print("\n" + "=" * 100 + "\n\n" + text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
