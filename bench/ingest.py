"""One ingest, timed from the first byte read to the commit (run in its own process by bench.run).

    python -m bench.ingest FILE DB            # ingest FILE into a new analysis in DB; prints JSON
    python -m bench.ingest FILE --parse-only  # only the format's parser over FILE (for function_graph: with
                                              # the call reconstruction), its record batches counted, not stored
"""
import json
import os
import sys
import time

from backend.store import InputFile, Store
from parsers.common import ParseReport
from parsers.detect import SNIFF_BYTES, detect


def parse_only(path: str) -> dict:
    with open(path, "rb") as f:
        t0 = time.perf_counter()
        parser = detect(f.read(SNIFF_BYTES), os.path.basename(path))
        f.seek(0)
        report = ParseReport(os.path.basename(path))
        rows = 0
        for _, batch in parser.parse(f, report):
            rows += batch.num_rows
        elapsed = time.perf_counter() - t0
    return {"seconds": elapsed, "lines": report.lines, "rows": rows, "bytes": os.path.getsize(path),
            "format": parser.FORMAT}


if __name__ == "__main__":
    path = sys.argv[1]
    if sys.argv[2] == "--parse-only":
        print(json.dumps(parse_only(path)))
        sys.exit(0)
    db = sys.argv[2]
    store = Store(db)
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        created = store.ingest([InputFile(os.path.basename(path), f, os.path.getsize(path))])
    elapsed = time.perf_counter() - t0
    store.close()
    src = created["sources"][0]
    print(json.dumps({"seconds": elapsed, "lines": src["lines"], "events": src["events"], "bytes": src["bytes"],
                      "id": created["id"]}))
