"""docs/ARCHITECTURE.md stays readable and names what exists: no line past 100 columns, and every Python, C or
TypeScript file it names in backticks is a file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"
COLUMNS = 100
# where a file named without its folder may be (a path with folders: from the repository, backend/ or frontend/)
ROOTS = (
    "",
    "backend",
    "backend/api",
    "backend/queries",
    "backend/derive",
    "backend/ingest",
    "backend/cache",
    "backend/schema",
    "parsers",
    "frontend",
    "frontend/src",
    "lab",
)


def test_no_line_is_wider_than_100_columns():
    wide = [
        f"line {n}: {len(line)} columns"
        for n, line in enumerate(ARCHITECTURE.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > COLUMNS
    ]
    assert not wide, wide


def test_every_file_it_names_exists():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    named = set(re.findall(r"`([\w./-]+\.(?:py|c|h|ts|tsx|sh|md|json))`", text))
    named = {n for n in named if not n.startswith("/") and "NAME" not in n}  # a URL's path, a file name's pattern
    missing = [name for name in sorted(named) if not any((REPO / root / name).exists() for root in ROOTS)]
    assert not missing, missing
