"""SourcePlan.also_many (derive/chain_plan.py): the overlapping members of each wait's group found at once, in chunks of
pairs, are what also() finds wait by wait, in the same order."""

import numpy as np
import pytest

from backend.derive import chain_plan


def _plan(rng, n: int) -> chain_plan.SourcePlan:
    p = chain_plan.SourcePlan.__new__(chain_plan.SourcePlan)  # (its links and groups given, not derived)
    start = rng.integers(0, 10**6, n)
    p.sid, p.cols = 1, {"start_ns": start, "end_ns": start + rng.integers(0, 10**5, n)}
    p.gid = np.where(rng.random(n) < 0.7, rng.integers(0, 40, n), -1)
    p._by_group = p._group_of = None
    p._also = {}
    return p


@pytest.mark.parametrize("pairs_at_once", [1, 97, 1 << 22])
def test_also_many_finds_what_also_finds(monkeypatch, pairs_at_once):
    monkeypatch.setattr(chain_plan, "PAIRS_AT_ONCE", pairs_at_once)
    rng = np.random.default_rng(7)
    at_once, one_by_one = _plan(rng, 2000), None
    rng = np.random.default_rng(7)
    one_by_one = _plan(rng, 2000)
    asked = np.random.default_rng(8).integers(0, 2000, 600)
    at_once.also(int(asked[0]))  # one asked before: kept as it was
    at_once.also_many(asked)
    got = [at_once._also[w] for w in asked.tolist()]
    assert got == [one_by_one.also(w) for w in asked.tolist()]
    assert sum(map(len, got)) > 1000  # (groups overlap: the comparison is not of empty lists)
