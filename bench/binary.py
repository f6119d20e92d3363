"""Binary vs text ingest of the same blktrace capture, measured in one run (a part of `make bench`'s ingest part;
alone: `python -m bench.binary`, or BENCH_ARGS="--parts binary").

The capture: bench/gen_blktrace.py's per-CPU set of BENCH_BLKTRACE_REQUESTS requests (default 2,000,000: 10 M
records in 4 files); its text: `blkparse -i` of that set (Debian's blktrace), or, where blkparse is not installed,
the lines parsers/_blktrace.c renders for it (equal to blkparse's: tests/test_blktrace_binary.py). Each round
reads the set, then the text, with the parser alone (`python -m bench.ingest ... --parse-only`: file to record
batches, no DuckDB), then ingests the set, then the text (`python -m bench.ingest`, into a fresh database), each in a
fresh process with the CPU check before it; bench-out/binary.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench import inputs
from bench.inputs import OUT, run_measured

REQUESTS = int(os.environ.get("BENCH_BLKTRACE_REQUESTS", "2000000"))
RUNS = int(os.environ.get("BENCH_INGEST_RUNS", "3"))


def capture(requests: int = REQUESTS) -> tuple[list[Path], Path, str]:
    """The set's files, its text and what made the text (written once, reused after)."""
    directory = OUT / f"blktrace-{requests}"
    text = OUT / f"blktrace-{requests}.blkparse.txt"
    done = directory / "complete"
    if not done.exists():
        print(f"generating {directory}...", file=sys.stderr, flush=True)
        shutil.rmtree(directory, ignore_errors=True)
        sys.path.insert(0, str(Path(__file__).parent))
        from gen_blktrace import generate

        generate(directory, requests)
        done.write_text("")
    files = sorted(directory.glob("bench.blktrace.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    maker = (
        "blkparse -i (Debian's blktrace " + _blkparse_version() + ")"
        if shutil.which("blkparse")
        else "parsers/_blktrace.c (blkparse is not installed)"
    )
    if not text.exists():
        print(f"writing {text} with {maker}...", file=sys.stderr, flush=True)
        tmp = text.with_name(text.name + ".part")
        if shutil.which("blkparse"):
            with open(tmp, "wb") as out:
                subprocess.run(
                    ["blkparse", "-i", "bench"], cwd=directory, stdout=out, stderr=subprocess.DEVNULL, check=True
                )
        else:
            _render_to(tmp, files)
        tmp.rename(text)
    return files, text, maker


def _blkparse_version() -> str:
    out = subprocess.run(["blkparse", "-V"], capture_output=True, text=True).stdout.split()
    return out[-1] if out else "?"


def _render_to(path: Path, files: list[Path]) -> None:
    from parsers import _blktrace

    r = _blktrace.Renderer(len(files), True)
    streams = [open(p, "rb") for p in files]
    out, end = bytearray(16 << 20), 0
    with open(path, "wb") as f:
        while True:
            end, _, done = r.render(out, end)
            if r.need() >= 0:
                r.feed(r.need(), streams[r.need()].read(1 << 20))
                continue
            f.write(out[:end])
            end = 0
            if done:
                break


def compare(runs: int = RUNS) -> dict:
    files, text, maker = capture()
    db = OUT / "bench-binary.duckdb"
    rounds = []
    try:
        for i in range(runs):
            row = {}
            for kind, paths in (("binary", files), ("text", [text])):
                for p in paths:
                    inputs.cached(p)
                print(f"blktrace {kind}: reader alone, run {i + 1} of {runs}...", file=sys.stderr, flush=True)
                check = inputs.cpu_check()
                result, wall, rss_kib, cpu = run_measured(
                    [sys.executable, "-m", "bench.ingest", *map(str, paths), "--parse-only"]
                )
                result.update(process_cpu_seconds=cpu, cpu_check_mb_s=check, load=os.getloadavg()[0])
                row[f"{kind}_reader"] = result
            for kind, paths in (("binary", files), ("text", [text])):
                for p in (db, Path(str(db) + ".wal")):
                    p.unlink(missing_ok=True)
                print(f"blktrace {kind}: run {i + 1} of {runs}...", file=sys.stderr, flush=True)
                for p in paths:
                    inputs.cached(p)
                check = inputs.cpu_check()
                result, wall, rss_kib, cpu = run_measured(
                    [sys.executable, "-m", "bench.ingest", *map(str, paths), str(db)]
                )
                result.update(process_seconds=wall, cpu_seconds=cpu, peak_rss_mib=rss_kib / 1024, cpu_check_mb_s=check)
                row[kind] = result
            rounds.append(row)
    finally:
        for p in (db, Path(str(db) + ".wal")):
            p.unlink(missing_ok=True)
    out = {"requests": REQUESTS, "text_made_by": maker, "rounds": rounds, "machine": inputs.machine()}
    for kind in ("binary", "text"):
        runs_ = [r[kind] for r in rounds]
        best = min(runs_, key=lambda r: r["seconds"])
        secs = sorted(r["seconds"] for r in runs_)
        out[kind] = {
            "bytes": best["bytes"],
            "events": best["events"],
            "lines": best["lines"],
            "best_seconds": best["seconds"],
            "median_seconds": secs[len(secs) // 2],
            "best_bytes_s": best["bytes"] / best["seconds"],
            "best_events_s": best["events"] / best["seconds"],
            "peak_rss_mib_max": max(r["peak_rss_mib"] for r in runs_),
        }
    for kind in ("binary", "text"):
        runs_ = [r[f"{kind}_reader"] for r in rounds]
        secs = sorted(r["seconds"] for r in runs_)
        out[f"{kind}_reader"] = {
            "events": runs_[0]["events"],
            "best_seconds": secs[0],
            "median_seconds": secs[len(secs) // 2],
            "best_events_s": runs_[0]["events"] / secs[0],
            "best_cpu_seconds": min(r["cpu_seconds"] for r in runs_),
        }
    out["reader_ratio_events_s"] = out["binary_reader"]["best_events_s"] / out["text_reader"]["best_events_s"]
    out["reader_ratio_median_seconds"] = out["text_reader"]["median_seconds"] / out["binary_reader"]["median_seconds"]
    out["ratio_events_s"] = out["binary"]["best_events_s"] / out["text"]["best_events_s"]
    out["ratio_median_seconds"] = out["text"]["median_seconds"] / out["binary"]["median_seconds"]
    (OUT / "binary.json").write_text(json.dumps(out, indent=1))
    return out


def table(r: dict) -> str:
    rows = [
        "| input (same capture) | size | events | ingest best (median) of "
        f"{len(r['rounds'])} | MB/s | M events/s | peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, label in (("binary", "blktrace per-CPU set (4 files)"), ("text", "its blkparse text")):
        k = r[kind]
        rows.append(
            f"| {label} | {k['bytes'] / 2**20:,.0f} MiB | {k['events']:,} | {k['best_seconds']:.2f} s "
            f"({k['median_seconds']:.2f}) | {k['best_bytes_s'] / 1e6:.0f} | **{k['best_events_s'] / 1e6:.2f}** | "
            f"{k['peak_rss_mib_max']:.0f} MiB |"
        )
    rows += [
        "",
        f"| reader alone (`bench.ingest --parse-only`), same capture | best (median) of {len(r['rounds'])} | "
        "M events/s | CPU s (best) | share of its ingest (best) |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, label in (("binary", "blktrace per-CPU set (4 files)"), ("text", "its blkparse text")):
        k = r[f"{kind}_reader"]
        rows.append(
            f"| {label} | {k['best_seconds']:.3f} s ({k['median_seconds']:.3f}) | **{k['best_events_s'] / 1e6:.2f}** "
            f"| {k['best_cpu_seconds']:.2f} | {k['best_seconds'] / r[kind]['best_seconds']:.0%} |"
        )
    rows.append(
        f"\nReader alone, binary / text: **{r['reader_ratio_events_s']:.2f}×** the events per second (best runs), "
        f"{r['reader_ratio_median_seconds']:.2f}× by median time."
    )
    checks = "; ".join(
        f"{row['binary']['cpu_check_mb_s']:.0f} / {row['text']['cpu_check_mb_s']:.0f}" for row in r["rounds"]
    )
    return "\n".join(rows) + (
        f"\n\nWhole ingest, binary / text: **{r['ratio_events_s']:.2f}×** the events per second (best runs), "
        f"{r['ratio_median_seconds']:.2f}× by median time. Text made by {r['text_made_by']}. Rounds alternate "
        f"binary then text; CPU check (SHA-256 MB/s) before each, binary / text: {checks}."
    )


if __name__ == "__main__":
    result = compare()
    print("\n## blktrace binary vs its blkparse text\n\n" + table(result), flush=True)
