"""SourcePlan.also_many (derive/chain_plan.py; also() asks it for one wait): the overlapping members of each wait's
group, found at once in chunks of pairs, are those the rule gives wait by wait, in file order."""

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


def _overlapping(p: chain_plan.SourcePlan, w: int) -> list[int]:
    """The rule, one wait at a time: the other waits of w's group (none without a group) that overlap it in time."""
    if p.gid[w] < 0:
        return []
    s, e = p.cols["start_ns"], p.cols["end_ns"]
    return [m for m in range(len(p.gid)) if p.gid[m] == p.gid[w] and m != w and s[m] < e[w] and e[m] > s[w]]


@pytest.mark.parametrize("pairs_at_once", [1, 97, 1 << 22])
def test_also_many_finds_what_the_rule_gives(monkeypatch, pairs_at_once):
    monkeypatch.setattr(chain_plan, "PAIRS_AT_ONCE", pairs_at_once)
    p = _plan(np.random.default_rng(7), 2000)
    asked = np.random.default_rng(8).integers(0, 2000, 600)
    first = p.also(int(asked[0]))  # one asked before: kept as it was
    p.also_many(asked)
    got = [p.also(w) for w in asked.tolist()]
    assert got == [_overlapping(p, w) for w in asked.tolist()]
    assert p.also(int(asked[0])) is first
    assert sum(map(len, got)) > 1000  # (groups overlap: the comparison is not of empty lists)
