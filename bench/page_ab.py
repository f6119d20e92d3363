"""Analysis page cold, old vs new in one run (docs/BENCHMARKS-HISTORY.md, issue 25 point 7): `bench/page.mjs`
against two running servers, alternating, so that both see the same minutes of a shared machine.

    python -m bench.page_ab --old URL ID --new URL ID [--rounds 6] [--runs 2] [--out bench-out/page-ab.json]

Each round takes /work/coord/bench.lock (as `flock` does: no two helpers measure at once), notes the CPU check
(`bench.inputs.cpu_check`) and the 1-minute load average, then runs `node bench/page.mjs` (`--runs` cold loads of every
tab, a fresh browser context each) on one server and then the other; odd rounds begin with the old one, even rounds
with the new one. Start each server from its own checkout (`git worktree add`), on a database it wrote or can read.
Prints the table (per tab: loads, old and new median with min–max, new/old) and writes every load to --out.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.inputs import cpu_check

ROOT = Path(__file__).resolve().parent.parent
LOCK = Path(os.environ.get("BENCH_LOCK", "/work/coord/bench.lock"))


def _page(base: str, aid: str, runs: int) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run(
            ["node", str(ROOT / "bench" / "page.mjs"), base, aid, str(runs), f.name],
            check=True,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        return json.loads(Path(f.name).read_text())


def measure(sides: dict[str, tuple[str, str]], rounds: int, runs: int) -> dict:
    out = {"rounds": [], "loads": {side: {} for side in sides}}
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        with open(LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            info = {"round": r + 1, "order": order, "cpu_mb_s": round(cpu_check()), "load": os.getloadavg()[0]}
            t0 = time.time()
            for side in order:
                res = _page(*sides[side], runs)
                for tab, recs in res["tabs"].items():
                    out["loads"][side].setdefault(tab, []).extend(recs)
            info.update(seconds=round(time.time() - t0, 1), load_after=os.getloadavg()[0])
        out["rounds"].append(info)
        print(
            f"round {r + 1}/{rounds}: {' then '.join(order)}, CPU check {info['cpu_mb_s']} MB/s, load"
            f" {info['load']:.1f} -> {info['load_after']:.1f}",
            file=sys.stderr,
            flush=True,
        )
    return out


def _cell(vals: list[float]) -> str:
    return f"{statistics.median(vals):.0f} ({min(vals):.0f}–{max(vals):.0f})" if vals else "—"


def table(out: dict) -> str:
    old, new = out["loads"]["old"], out["loads"]["new"]
    lines = [
        "| tab | loads old/new | old p50 (min–max) ms | new p50 (min–max) ms | new/old |",
        "|---|---:|---:|---:|---:|",
    ]
    for tab in old:
        a = [x["ready"] for x in old[tab] if "ready" in x]
        b = [x["ready"] for x in new.get(tab, []) if "ready" in x]
        ratio = f"{statistics.median(b) / statistics.median(a):.2f}" if a and b else "—"
        lines.append(f"| {tab} | {len(a)}/{len(b)} | {_cell(a)} | {_cell(b)} | {ratio} |")
    cpu = [r["cpu_mb_s"] for r in out["rounds"]]
    load = [r["load"] for r in out["rounds"]] + [r["load_after"] for r in out["rounds"]]
    lines.append("")
    lines.append(
        f"{len(out['rounds'])} rounds; CPU check {min(cpu)}–{max(cpu)} MB/s; 1-minute load average"
        f" {min(load):.1f}–{max(load):.1f}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", nargs=2, metavar=("URL", "ID"), required=True)
    ap.add_argument("--new", nargs=2, metavar=("URL", "ID"), required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runs", type=int, default=2, help="cold loads of each tab per side and round")
    ap.add_argument("--out", type=Path, default=ROOT / "bench-out" / "page-ab.json")
    a = ap.parse_args(argv)
    out = measure({"old": tuple(a.old), "new": tuple(a.new)}, a.rounds, a.runs)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1))
    print(table(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
