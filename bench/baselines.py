"""The baselines every ingest figure of `make bench` is set beside, measured on the same file in the same run:

* `wc -l FILE`: the I/O limit (reading the bytes and finding the newlines);
* DuckDB's own bulk read of the lines into columns: `read_csv` of the file as one VARCHAR column per line, each
  line split on whitespace runs (`string_split_regex`) into its first COLUMNS fields, written as a table to a fresh
  database file. What the ingest does on top of that (numbers parsed, requests or calls rebuilt, everything
  derived) is what the ratio ingest / DuckDB measures; the machine's speed that minute cancels out.

    python -m bench.baselines FILE    # prints both, JSON
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COLUMNS = 8


def wc_l(path: Path) -> dict:
    t0 = time.perf_counter()
    out = subprocess.run(["wc", "-l", str(path)], check=True, capture_output=True, text=True).stdout
    return {"seconds": time.perf_counter() - t0, "lines": int(out.split()[0])}


def duckdb_columns(path: Path) -> dict:
    import duckdb

    cols = ", ".join(f"s[{i + 1}] AS c{i + 1}" for i in range(COLUMNS))
    with tempfile.TemporaryDirectory(prefix="bench-duckdb-", dir=path.parent) as tmp:
        con = duckdb.connect(str(Path(tmp) / "cols.duckdb"))
        t0 = time.perf_counter()
        con.execute(
            f"CREATE TABLE cols AS SELECT {cols} FROM (SELECT string_split_regex(trim(line), '\\s+') AS s FROM "
            "read_csv(?, columns = {'line': 'VARCHAR'}, header = false, delim = '\\x01', quote = '', escape = '', "
            "auto_detect = false, strict_mode = false))",
            [str(path)],
        )
        con.commit()
        n = con.execute("SELECT count(*) FROM cols").fetchall()[0][0]
        seconds = time.perf_counter() - t0
        con.close()
    return {"seconds": seconds, "lines": n}


def measure(path: Path) -> dict:
    return {"wc_l": wc_l(path), "duckdb": duckdb_columns(path)}


if __name__ == "__main__":
    print(json.dumps(measure(Path(sys.argv[1])), indent=1))
