"""trace.dat ingest vs the text ingest of the same capture (docs/BENCHMARKS.md, "trace.dat").

    python -m bench.tracedat [--copies 10] [--fg-rounds 20000] [--runs 3] [--parts-runs 5] [--out bench-out/tracedat]

Inputs: the two trace.dat samples of shared/ with their DERIVED `trace-cmd report` text, and a larger capture made
from the v7 sample: `trace-cmd convert` to an uncompressed v6 file, whose ring-buffer pages are repeated `--copies`
times per CPU (each copy's page timestamps moved past the previous copy's end, so the events stay in order), then
converted back to v7 zstd; and a function_graph capture made by bench/gen_tracedat.py (`--fg-rounds`, 69 events a
round); each rendered by `trace-cmd report` for its text. Each capture is ingested `--runs` times three ways in turn
(the .dat as records, the .dat from `trace-cmd report`'s text with the decoder taken away, as before the records and
as the fallback still reads it, and the report text), each into a fresh database in this process: wall seconds from
the first byte read to the committed analysis, input MB/s, events/s and the ratio to the text's events/s. Then the
reader stage alone (file -> tables, no DuckDB): the .dat read as records (parsers/tracedat.py: the layout walk beside
tracedat-records, its records folded) and its report by the text parser, their ratio, each one's CPU seconds (the
process' and the decoder child's), and the .dat path's parts alone: the layout walk (as tracedat.parse walks it: a
zstd file's chunks' headers checked, each CPU's first chunk decompressed) and tracedat-records to /dev/null (wall and
CPU); each the median of `--parts-runs`.

The decoder's start (libtracecmd's open: its plugins, the file's formats and kallsyms) is ~30-40 ms whatever the
capture's size: on the 10x copies (414,000 events) it is a fifth of the reader stage. `--copies 50 --fg-rounds 100000`
(2.07 M and 3.6 M events) measures the rates at which each path reads once started.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import struct
import subprocess
import tempfile
import time
from pathlib import Path

from backend.store import InputFile, Store
from bench import gen_tracedat
from parsers import funcgraph, tracedat, tracedat_records
from parsers.common import ParseReport
from parsers.tracedat_layout import read_layout

SHARED = Path(__file__).resolve().parents[2] / "shared" / "samples-public" / "trace-cmd-report"
SAMPLES = [
    (SHARED / "trace-dat" / "langraph-trace.dat", SHARED / "derived-langraph-report-sched-softirq-kstack.txt"),
    (
        SHARED / "trace-dat" / "elainecole-kernel-monitor-trace.dat",
        SHARED / "derived-elainecole-report-sched_switch.txt",
    ),
]
COPY_SPAN_NS = 20_000_000_000  # each copy's pages 20 s after the previous copy's (the sample spans ~10 s)


def scaled_v6(src_v6: Path, copies: int, out: Path) -> None:
    """An uncompressed v6 trace.dat whose CPU data is src's repeated `copies` times, timestamps moved on."""
    data = src_v6.read_bytes()
    with open(src_v6, "rb") as f:
        layout = read_layout(f, len(data))
    cpus = layout.buffers[0].cpus
    table = data.rindex(b"flyrecord\0", 0, min(off for _, off, size in cpus if size)) + 10
    page = layout.page_size
    header = bytearray(data[:table])
    at = (table + 16 * len(cpus) + page - 1) // page * page
    blocks, entries = [], []
    for _, off, size in cpus:
        pages = [bytearray(data[p : p + page]) for p in range(off, off + size, page)]
        body = bytearray()
        for k in range(copies):
            for pg in pages:
                stamped = bytearray(pg)
                struct.pack_into("<Q", stamped, 0, struct.unpack_from("<Q", pg, 0)[0] + k * COPY_SPAN_NS)
                body += stamped
        entries.append((at, len(body)))
        blocks.append(body)
        at += len(body)
    with open(out, "wb") as f:
        f.write(header)
        for off, size in entries:
            f.write(struct.pack("<QQ", off, size))
        for (off, _), body in zip(entries, blocks):
            f.write(bytes(off - f.tell()))
            f.write(body)


def inputs(work: Path, copies: int, fg_rounds: int) -> list[tuple[Path, Path]]:
    pairs = list(SAMPLES)
    made = work / f"function-graph-{fg_rounds}.dat"  # bench/gen_tracedat.py: calls, switches, wake-ups
    if not made.exists():
        gen_tracedat.write(made, fg_rounds)
    v6 = work / "langraph-v6.dat"
    big6, big7 = work / f"langraph-x{copies}-v6.dat", work / f"langraph-x{copies}-v7-zstd.dat"
    if not big7.exists():
        subprocess.run(
            [
                "trace-cmd",
                "convert",
                "-i",
                str(SAMPLES[0][0]),
                "-o",
                str(v6),
                "--file-version",
                "6",
                "--compression",
                "none",
            ],
            check=True,
            capture_output=True,
        )
        scaled_v6(v6, copies, big6)
        subprocess.run(
            ["trace-cmd", "convert", "-i", str(big6), "-o", str(big7), "--file-version", "7", "--compression", "zstd"],
            check=True,
            capture_output=True,
        )
    for dat in (big6, big7, made):
        txt = dat.with_suffix(".txt")
        if not txt.exists():
            with open(txt, "wb") as f:
                subprocess.run(["trace-cmd", "report", "-i", str(dat)], check=True, stdout=f)
        pairs.append((dat, txt))
    return pairs


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (trace-cmd)."""
    return sum(
        r.ru_utime + r.ru_stime
        for r in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


def ingest_once(path: Path, db: Path, via_report: bool = False) -> tuple[float, float, int]:
    """One ingest into a fresh database: wall and CPU seconds, events. via_report: a trace.dat read from `trace-cmd
    report`'s text (the decoder taken away), as before the records and as the fallback still does."""
    store = Store(db)
    saved = tracedat_records.PROGRAM
    if via_report:
        tracedat_records.PROGRAM = Path("/nonexistent/tracedat-records")
    try:
        t, c = time.perf_counter(), _cpu()
        with open(path, "rb") as f:
            got = store.ingest([InputFile(path.name, f, path.stat().st_size)])
        return time.perf_counter() - t, _cpu() - c, got["sources"][0]["events"]
    finally:
        tracedat_records.PROGRAM = saved
        store.close()
        for p in db.parent.glob(db.name + "*"):
            p.unlink()


def _read(parse) -> tuple[float, float]:
    """Wall and CPU seconds (this process' and its children's: the decoder) of one read."""
    t, c = time.perf_counter(), _cpu()
    for _ in parse():
        pass
    return time.perf_counter() - t, _cpu() - c


def parts(dat: Path, txt: Path, runs: int = 1) -> dict[str, float]:
    """The reader stage (file -> tables, no DuckDB) of each input, wall and CPU, and the .dat reader's parts alone: the
    median of `runs` (the ratio: of the runs' ratios)."""
    if runs > 1:
        each = [parts(dat, txt) for _ in range(runs)]
        return {key: statistics.median(r[key] for r in each) for key in each[0]}
    t = time.perf_counter()
    with open(dat, "rb") as f:
        layout = read_layout(f, dat.stat().st_size, decompress_chunks=False)  # as tracedat.parse walks it
    walk = time.perf_counter() - t
    t, c = time.perf_counter(), _cpu()
    subprocess.run(
        [str(tracedat_records.PROGRAM), str(dat), "--sections"],
        input=tracedat_records.sections_line(layout).encode(),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    decoder, decoder_cpu = time.perf_counter() - t, _cpu() - c
    data = txt.read_bytes()
    native, native_cpu = _read(lambda: tracedat.parse(open(dat, "rb"), ParseReport(dat.name)))
    text, text_cpu = _read(lambda: funcgraph.parse(io.BytesIO(data), ParseReport(txt.name)))
    return {
        ".dat reader": native,
        "text reader": text,
        "ratio": text / native,
        ".dat reader CPU": native_cpu,
        "text reader CPU": text_cpu,
        "layout walk": walk,
        "tracedat-records": decoder,
        "tracedat-records CPU": decoder_cpu,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fg-rounds", type=int, default=20000)
    ap.add_argument("--parts-runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("bench-out/tracedat"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    pairs = inputs(args.out, args.copies, args.fg_rounds)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "b.duckdb"
        print(
            "| capture | input | bytes | events | median s (runs) | CPU s | MB/s | events/s | / text |\n"
            "|---|---|---|---|---|---|---|---|---|"
        )
        for dat, txt in pairs:
            ways = {"trace.dat": (dat, False), "trace.dat via report": (dat, True), "report text": (txt, False)}
            times: dict[str, list[float]] = {way: [] for way in ways}
            cpu: dict[str, list[float]] = {way: [] for way in ways}
            events = {}
            for _ in range(args.runs):
                for way, (path, via_report) in ways.items():
                    secs, used, events[way] = ingest_once(path, db, via_report)
                    times[way].append(secs)
                    cpu[way].append(used)
            rate = {way: events[way] / statistics.median(times[way]) for way in ways}
            for way, (path, _) in ways.items():
                med = statistics.median(times[way])
                size = path.stat().st_size
                print(
                    f"| {dat.stem} | {way} | {size:,} | {events[way]:,} | "
                    f"{med:.2f} ({', '.join(f'{s:.2f}' for s in times[way])}) | {statistics.median(cpu[way]):.2f} | "
                    f"{size / med / 1e6:.1f} | {rate[way]:,.0f} | {rate[way] / rate['report text']:.2f}x |"
                )
        head = parts(*pairs[0])
        print("\n| capture | " + " | ".join(head) + " |\n|---|" + "---|" * len(head))
        for dat, txt in pairs:
            p = parts(dat, txt, args.parts_runs)
            print(
                f"| {dat.stem} | "
                + " | ".join(f"{v:.2f}x" if k == "ratio" else f"{v:.3f} s" for k, v in p.items())
                + " |"
            )
        print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
