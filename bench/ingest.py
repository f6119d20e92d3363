"""One ingest, timed from the first byte read to the commit (run in its own process by bench.run).

python -m bench.ingest FILE... DB            # ingest the FILEs into a new analysis in DB; prints JSON
python -m bench.ingest FILE... --parse-only  # only the format's parser over the FILEs (function_graph: with the
                                             # call reconstruction; blktrace's per-CPU files: read as one set),
                                             # its record batches counted, not stored
"""

import json
import os
import sys
import time
from pathlib import Path

from backend.store import InputFile, Store
from parsers.common import ParseReport
from parsers.detect import SNIFF_BYTES, detect


def own_peak_kib() -> int:
    """This process' own peak resident set since its exec (VmHWM). Not wait4's ru_maxrss: Linux starts that at
    the parent's peak when the parent forks and execs (the exec saves the replaced memory map's high-water mark), so
    a bench process that had grown to 1139 MiB (generating the blktrace capture in-process) made every ingest it
    ran report 1139 MiB."""
    for ln in Path("/proc/self/status").read_text().splitlines():
        if ln.startswith("VmHWM:"):
            return int(ln.split()[1])
    return 0


def parse_only(paths: list[str]) -> dict:
    files = [open(p, "rb") for p in paths]
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        parser = detect(files[0].read(SNIFF_BYTES), os.path.basename(paths[0]))
        files[0].seek(0)
        report = ParseReport(os.path.basename(paths[0]))
        if hasattr(parser, "parse_set"):
            batches = parser.parse_set([(os.path.basename(p), f) for p, f in zip(paths, files)], report)
        else:
            batches = parser.parse(files[0], report)
        rows = 0
        for _, batch in batches:
            rows += batch.num_rows
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        for f in files:
            f.close()
    return {
        "seconds": elapsed,
        "cpu_seconds": cpu,  # this process' CPU (every thread) over the same span
        "lines": report.lines,
        "events": report.events,
        "rows": rows,
        "bytes": sum(os.path.getsize(p) for p in paths),
        "format": parser.FORMAT,
        "vmhwm_kib": own_peak_kib(),
    }


if __name__ == "__main__":
    paths = sys.argv[1:-1]
    if sys.argv[-1] == "--parse-only":
        print(json.dumps(parse_only(paths)))
        sys.exit(0)
    db = sys.argv[-1]
    store = Store(db)
    t0 = time.perf_counter()
    files = [InputFile(os.path.basename(p), open(p, "rb"), os.path.getsize(p)) for p in paths]
    try:
        created = store.ingest(files)
    finally:
        for f in files:
            f.stream.close()
    elapsed = time.perf_counter() - t0
    store.close()
    src = created["sources"][0]
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "lines": src["lines"],
                "events": src["events"],
                "bytes": src["bytes"],
                "id": created["id"],
                "vmhwm_kib": own_peak_kib(),
            }
        )
    )
