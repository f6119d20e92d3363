"""perf script text: the C reader (parsers/perf.py + parsers/_perf.c) beside the Python reader it replaced
(parsers/perf_python.py), on the same inputs in the same run (a part of `make bench`: BENCH_ARGS="--parts
perf_script"; alone: `python -m bench.perf_script`).

    python -m bench.perf_script [--runs 3] [--lines N]
    python -m bench.perf_script --one READER FILE     # one parse in this process; prints JSON

Inputs: bench/gen_perf_script.py's capture of BENCH_PERF_LINES lines (default 10,000,000: scheduler and block events
with their call chains, in the proportions of the lab's recordings) and the largest lab recording
(samples/real/writeback-reads-buffered/perf.script.txt.gz, gunzipped into bench-out/). Each round parses each input
with the C reader, then the Python reader, each in a fresh process (`--one`): the parse alone from the first byte read
to the last record batch made (none stored), its CPU seconds (time.process_time: the machine's other load does not
count) and wall seconds; the CPU check (bench/inputs.py) before each. Both readers must give the same rows per table.
Target (issue 36): the C reader at 5 M lines per second of CPU or more. bench-out/perf_script.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import inputs
from bench.inputs import OUT

LINES = int(os.environ.get("BENCH_PERF_LINES", "10000000"))
RUNS = int(os.environ.get("BENCH_INGEST_RUNS", "3"))
TARGET_LINES_S = 5e6
REAL = Path(__file__).resolve().parents[1] / "samples" / "real" / "writeback-reads-buffered" / "perf.script.txt.gz"
READERS = {"C": "parsers.perf", "Python": "parsers.perf_python"}


def generated(lines: int = LINES) -> Path:
    p = OUT / f"perf-script-{lines}.txt"
    return inputs.generate(p, ["bench/gen_perf_script.py", str(p), "--lines", str(lines)])


def real() -> Path:
    p = OUT / "writeback-reads-buffered.perf-script.txt"
    if not p.exists():
        OUT.mkdir(exist_ok=True)
        tmp = p.with_name(p.name + ".part")
        with gzip.open(REAL, "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        tmp.rename(p)
    return p


def one(reader: str, path: str) -> dict:
    """One parse of `path` by `reader` (a module name), in this process."""
    import importlib

    from parsers.common import ParseReport

    module = importlib.import_module(READERS.get(reader, reader))
    report, rows = ParseReport(os.path.basename(path)), {}
    c0, w0 = time.process_time(), time.perf_counter()
    with open(path, "rb") as f:
        for name, batch in module.parse(f, report):
            rows[name] = rows.get(name, 0) + batch.num_rows
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return {
        "reader": reader,
        "cpu_seconds": cpu,
        "seconds": wall,
        "lines": report.lines,
        "bytes": report.bytes_read,
        "events": report.events,
        "rows": rows,
    }


def compare(runs: int = RUNS, lines: int = LINES) -> dict:
    files = {"generated": generated(lines), "recorded": real()}
    out: dict = {"machine": inputs.machine(), "runs": runs, "target_lines_s": TARGET_LINES_S, "inputs": {}}
    for label, path in files.items():
        each: dict[str, list[dict]] = {r: [] for r in READERS}
        for i in range(runs):
            for reader in READERS:
                print(f"perf script {label}: {reader} reader, run {i + 1} of {runs}...", file=sys.stderr, flush=True)
                inputs.cached(path)
                check = inputs.cpu_check()
                proc = subprocess.run(
                    [sys.executable, "-m", "bench.perf_script", "--one", reader, str(path)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                result = json.loads(proc.stdout)
                result.update(cpu_check_mb_s=check, load=inputs.loadavg())
                each[reader].append(result)
        rows = {r: each[r][0]["rows"] for r in READERS}
        if rows["C"] != rows["Python"]:
            raise SystemExit(f"{path}: the readers' rows differ: {rows}")
        best = {r: min(each[r], key=lambda x: x["cpu_seconds"]) for r in READERS}
        out["inputs"][label] = {
            "file": path.name,
            "lines": best["C"]["lines"],
            "bytes": best["C"]["bytes"],
            "events": best["C"]["events"],
            "rows": rows["C"],
            "runs": each,
            "best": {
                r: {
                    "cpu_seconds": b["cpu_seconds"],
                    "seconds": b["seconds"],
                    "lines_s_cpu": b["lines"] / b["cpu_seconds"],
                }
                for r, b in best.items()
            },
            "ratio_cpu": best["Python"]["cpu_seconds"] / best["C"]["cpu_seconds"],
            "ratios_cpu": [p["cpu_seconds"] / c["cpu_seconds"] for c, p in zip(each["C"], each["Python"])],
        }
    out["pass"] = all(v["best"]["C"]["lines_s_cpu"] >= TARGET_LINES_S for v in out["inputs"].values())
    (OUT / "perf_script.json").write_text(json.dumps(out, indent=1))
    return out


def table(r: dict) -> str:
    rows = [
        "| input | C / Python: × less CPU, best (each round) | C: M lines/s of CPU, best | C: CPU s (wall s) | "
        "Python: M lines/s of CPU | Python: CPU s (wall s) | target ≥ 5 M lines/s |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, v in r["inputs"].items():
        c, p = v["best"]["C"], v["best"]["Python"]
        verdict = "PASS" if c["lines_s_cpu"] >= r["target_lines_s"] else "**MISS**"
        rows.append(
            f"| {label}: {v['file']}, {v['lines']:,} lines, {v['bytes'] / 2**20:,.0f} MiB, {v['events']:,} "
            f"events | **{v['ratio_cpu']:.1f}×** ({', '.join(f'{x:.1f}' for x in v['ratios_cpu'])}) | "
            f"**{c['lines_s_cpu'] / 1e6:.2f}** | {c['cpu_seconds']:.2f} ({c['seconds']:.2f}) | "
            f"{p['lines_s_cpu'] / 1e6:.2f} | {p['cpu_seconds']:.2f} ({p['seconds']:.2f}) | {verdict} |"
        )
    checks = "; ".join(
        f"{label}: " + ", ".join(f"{x['cpu_check_mb_s']:.0f}" for x in v["runs"]["C"] + v["runs"]["Python"])
        for label, v in r["inputs"].items()
    )
    loads = [x["load"] for v in r["inputs"].values() for runs in v["runs"].values() for x in runs]
    return "\n".join(rows) + (
        f"\n\nBest of {r['runs']} runs per reader, each the parse alone in a fresh process (every record batch made, "
        f"none stored); CPU time is the process' (time.process_time), wall time in parentheses. Same rows per table "
        f"from both readers. CPU check (SHA-256 MB/s) before each run, C runs then Python runs: {checks}. Load "
        f"average {min(loads):.1f}–{max(loads):.1f}."
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", nargs=2, metavar=("READER", "FILE"), help="one parse in this process (JSON)")
    ap.add_argument("--runs", type=int, default=RUNS)
    ap.add_argument("--lines", type=int, default=LINES, help="lines of the generated capture")
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(*a.one)))
        return 0
    result = compare(a.runs, a.lines)
    print("\n## perf script text: the C reader vs the Python reader\n\n" + table(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
