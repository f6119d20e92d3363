"""One ingest, timed from the first byte read to the commit (run in its own process by bench.run)."""
import json
import os
import sys
import time

from backend.store import InputFile, Store

if __name__ == "__main__":
    path, db = sys.argv[1], sys.argv[2]
    store = Store(db)
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        created = store.ingest([InputFile(os.path.basename(path), f, os.path.getsize(path))])
    elapsed = time.perf_counter() - t0
    store.close()
    src = created["sources"][0]
    print(json.dumps({"seconds": elapsed, "lines": src["lines"], "events": src["events"], "bytes": src["bytes"],
                      "id": created["id"]}))
