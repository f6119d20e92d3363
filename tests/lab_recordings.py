"""The lab's recordings (samples/real/NAME/, made by `make lab`: lab/README.md) as the tests read them: each one's
TRUTH.json, its files by reader, and one analysis of what a user would upload together (the trace.dat or tracefs
text, the blktrace per-CPU set of every layer, offcputime's multi-line dump)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

from tests.conftest import SAMPLES

REAL = SAMPLES / "real"


def names() -> list[str]:
    return sorted(p.parent.name for p in REAL.glob("*/TRUTH.json"))


def truth(name: str) -> dict:
    return json.loads((REAL / name / "TRUTH.json").read_text())


def text_file(name: str, filename: str, tmp: Path) -> Path | None:
    """A recorded text file as a user holds it: as committed, or gunzipped into tmp (files past 1 MiB are kept
    gzipped); None when the recording has no such file."""
    path = REAL / name / filename
    if path.exists():
        return path
    packed = path.with_name(path.name + ".gz")
    if not packed.exists():
        return None
    out = tmp / filename
    with gzip.open(packed, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def upload(name: str, tmp: Path) -> list[Path]:
    """The files a user would drop together: the ftrace capture, every layer's blktrace set, offcputime."""
    rec = REAL / name
    ftrace = rec / "trace.dat" if (rec / "trace.dat").exists() else text_file(name, "trace.txt", tmp)
    files = [ftrace, *sorted((rec / "blktrace").glob("*.blktrace.*"))]
    for extra in ("offcputime.txt", "offcputime.folded.txt"):
        if (rec / extra).exists():
            files.append(rec / extra)
            break
    return files


def devices(name: str) -> dict[str, str]:
    """Device name -> 'major,minor', from the guest's `ls -l /dev/...` (devices.txt)."""
    found = {}
    for line in (REAL / name / "devices.txt").read_text().splitlines():
        m = re.match(r"b\S+\s+\d+\s+\S+\s+\S+\s+(\d+),\s+(\d+)\s.*\s/dev/(\S+)$", line)
        if m:
            found[m.group(3)] = f"{m.group(1)},{m.group(2)}"
    return found
