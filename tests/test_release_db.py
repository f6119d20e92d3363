"""A database written by an earlier release (tests/fixtures/release-2f0e012.*, made by make_release_db.py at that
commit) opens with today's code and answers every read exactly as that release did."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backend.app import create_app
from backend.analysis import memo
from backend.store import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RELEASE = "release-2f0e012"


@pytest.fixture
def release_store(tmp_path):
    db = tmp_path / f"{RELEASE}.duckdb"
    with gzip.open(FIXTURES / f"{RELEASE}.duckdb.gz", "rb") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    memo.forget()
    store = Store(db)
    yield store
    store.close()
    memo.forget()


def test_release_database_answers_as_it_did(release_store):
    kept = json.loads((FIXTURES / f"{RELEASE}.answers.json").read_text())
    assert len(kept["answers"]) > 40
    with TestClient(create_app(release_store, warm=False)) as client:
        for url, answer in kept["answers"].items():
            r = client.get(url)
            assert (r.status_code, r.json()) == (answer["status"], answer["body"]), url
