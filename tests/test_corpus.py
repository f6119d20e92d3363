"""The corpus: every file of shared/samples-public/ and samples/ is ingested (a blktrace set's files together) and each
tab's first answer (what the page asks first: first_views.STEPS) is checked against a golden summary
(tests/golden/corpus.json: what it shows, how many rows, the top item), so that a change that empties a view on a
real capture fails here. A file that is not a supported format (bcc histograms, fio logs) must be refused: the
golden records the message. Rewrite the goldens with UPDATE_GOLDEN=1 (and say why in the commit).

Every capture also has to open on something: a view with data, or a statement of what it lacks and how to capture
it (the capabilities' `missing`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from backend.cache import AnalysisCache
from backend.ingest import InputFile
from backend.ingest.files import IngestError
from backend.queries import first_views
from backend.queries.capabilities import capabilities
from backend.store import Store
from tests.conftest import PUBLIC, SAMPLES, SHARED, needs_public, needs_shared

GOLDEN = Path(__file__).resolve().parent / "golden" / "corpus.json"


def _units() -> dict[str, list[Path]]:
    """name (a path under the corpus' root) -> the files ingested together."""
    units: dict[str, list[Path]] = {}
    for p in sorted(PUBLIC.rglob("*")):
        if not p.is_file() or p.name == "SOURCES.md":
            continue
        rel = p.relative_to(PUBLIC)
        if rel.parts[0] == "blktrace-binary":  # a capture's files (a per-CPU set, or a directory of dumps) together
            units.setdefault(f"public/{Path(*rel.parts[:2])}", []).append(p)
        else:
            units[f"public/{rel}"] = [p]
    for p in sorted(SAMPLES.glob("*.txt")):
        units[f"samples/{p.name}"] = [p]
    return units


UNITS = _units()


def _top_wait(w: dict) -> dict:
    return {
        "comm": w["comm"],
        "pid": w["pid"],
        "lock": w["lock"],
        "duration_ns": w["duration_ns"],
        "stack_frames": len(w["stack"] or []),
        "inferred": w["inferred"],
    }


def _summary(con, aid: str) -> dict:
    """Each tab's first answer, summarised: what it shows, how many rows, the top item."""
    out: dict = {}
    cache = AnalysisCache()
    for name, call in first_views.STEPS:
        r = call(con, cache, aid)
        if isinstance(r, bytes):
            r = json.loads(r)
        if name == "requests-page":
            name, r = "requests", r["items"]
        elif name == "waits":
            r = r["items"]
        elif name in ("capabilities", "marks", "waits-heatmap", "offcpu-tasks"):
            continue  # the capabilities: below; the others' rows are the same tables' as the summarised ones
        if name == "heatmap":
            out[name] = {"cells": len(r["cells"]), "count": sum(c["count"] for c in r["cells"])}
        elif name == "latency-over-time":
            continue  # the same requests as the heatmap and the dispatch summary
        elif name == "dispatch-summary":
            out[name] = {
                "groups": len(r),
                "requests": sum(g["count"] for g in r),
                "top": [r[0]["key"], r[0]["count"]] if r else None,
            }
        elif name == "requests":
            out[name] = {"rows": len(r), "top": [r[0]["comm"], r[0]["i2d_ns"]] if r else None}
        elif name == "timeline":
            out[name] = {
                "lanes": r["total_lanes"],
                "tracks": len(r["tracks"]),
                "arrows": len(r["arrows"]),
                "marks": len(r["marks"]),
            }
        elif name == "heatmap-metrics":
            out[name] = {
                "metrics": [m["metric"] for m in r["metrics"]],
                "functions": len(r["functions"]),
                "top_function": r["functions"][0]["func"] if r["functions"] else None,
                "locks": [x["lock_key"] for x in r["locks"]][:5],
            }
        elif name == "chains":
            out[name] = {
                "rows": len(r),
                "top": {
                    "duration_ns": r[0]["duration_ns"],
                    "links": [[ln["comm"], ln["lock"]] for ln in r[0]["links"]][:4],
                }
                if r
                else None,
            }
        elif name == "waits":
            out[name] = {
                "rows": len(r),
                "with_stack": sum(1 for w in r if w["stack"]),
                "top": _top_wait(r[0]) if r else None,
            }
        elif name == "flamegraph":
            kids = r["root"].get("children") or []
            out[name] = {
                "unit": r["unit"],
                "total": r["total"],
                "stacks": r["stacks"],
                "top": kids[0]["name"] if kids else None,
                "locks": [[x["lock"], x["value"]] for x in r["locks"]][:3],
            }
    c = capabilities(con, cache, aid)
    out["capabilities"] = {
        "views": {v["tab"]: v["state"] for v in c["views"]},
        "missing": [m["what"] for m in c["missing"]],
        "lost": len(c["lost"]),
    }
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, dict]:
    """Every unit ingested once into one database (module scope: ~1 min for the corpus), with its summary."""
    store = Store(tmp_path_factory.mktemp("corpus") / "corpus.duckdb")
    results: dict[str, dict] = {}
    try:
        for name, paths in UNITS.items():
            files = [InputFile(p.name, open(p, "rb"), p.stat().st_size) for p in paths]
            try:
                created = store.ingest(files, name)
            except IngestError as e:
                results[name] = {"refused": e.detail}
                continue
            finally:
                for f in files:
                    f.stream.close()
            con = store.cursor()
            try:
                results[name] = {
                    "sources": [
                        [s["filename"], s["format"], s["events"], s["skipped_lines"]] for s in created["sources"]
                    ],
                    **_summary(con, created["id"]),
                }
            finally:
                con.close()
        yield results
    finally:
        store.close()


def _golden() -> dict:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


@needs_public
def test_golden_lists_every_file(corpus):
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(corpus, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert sorted(_golden()) == sorted(UNITS), "a corpus file was added or removed: UPDATE_GOLDEN=1"


@pytest.mark.parametrize("name", list(UNITS))
def test_each_tab_first_answer(corpus, name):
    assert corpus[name] == _golden().get(name)


@pytest.mark.parametrize("name", list(UNITS))
def test_opens_on_content_or_says_what_it_lacks(corpus, name):
    r = corpus[name]
    if "refused" in r:
        assert r["refused"] and ("line" in r["refused"] or "byte" in r["refused"] or "format" in r["refused"])
        return
    caps = r["capabilities"]
    with_data = [t for t, state in caps["views"].items() if state == "data" and t != "sources"]
    assert with_data or caps["missing"], name


@needs_public
def test_unsupported_formats_are_refused(corpus):
    for name, r in corpus.items():
        if "/bcc-histogram/" in name or "/fio/" in name:
            assert "refused" in r, name


@needs_public
def test_langraph_waits_have_stacks_and_locks(corpus):
    r = corpus["public/trace-cmd-report/derived-langraph-report-sched-softirq-kstack.txt"]
    assert r["waits"]["rows"] == r["waits"]["with_stack"] > 0
    assert r["waits"]["top"]["lock"] not in (None, "?")


@needs_shared("seed-excerpts")
def test_the_seed_excerpts_in_samples_are_the_bug_reports():
    """samples/ holds the kernel bug report's excerpts byte for byte: the tests read them there, with or without
    ../shared."""
    excerpts = sorted((SHARED / "seed-excerpts").glob("*.txt"))
    assert len(excerpts) == 3
    for p in excerpts:
        assert (SAMPLES / p.name).read_bytes() == p.read_bytes(), p.name
