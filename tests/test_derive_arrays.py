"""backend/derive/arrays.py: key_ids numbers rows by their key as np.unique(axis=0) does; backend/distinct.py gives
np.unique's values."""

from __future__ import annotations

import numpy as np
import pytest

from backend.derive.arrays import key_ids
from backend.distinct import distinct


@pytest.mark.parametrize("seed", range(5))
def test_key_ids_number_keys_as_unique_over_rows(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    cols = [rng.integers(-3, 4, n), rng.integers(0, 2, n), rng.integers(-(1 << 62), 1 << 62, n) // (1 << 60)]
    want = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1].reshape(-1)
    assert key_ids(*cols).tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(3))
def test_key_ids_of_columns_too_wide_to_pack(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    cols = [rng.integers(-(1 << 62), 1 << 62, n) // 3 * 3, rng.integers(0, 4, n), rng.integers(-(1 << 40), 0, n) // 5]
    cols[0][: n // 2] = cols[0][0]  # repeated keys
    want = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1].reshape(-1)
    assert key_ids(*cols).tolist() == want.tolist()


def test_key_ids_of_one_column_and_of_none():
    assert key_ids(np.array([5, -1, 5, 7])).tolist() == [1, 0, 1, 2]
    assert key_ids(np.array([], np.int64), np.array([], np.int64)).tolist() == []
    # the first column decides before the second: (0, 9) < (1, 0)
    assert key_ids(np.array([1, 0, 1]), np.array([0, 9, 0])).tolist() == [1, 0, 1]


@pytest.mark.parametrize("seed", range(5))
def test_distinct_is_unique_by_a_sort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    times = 11_400_000_000_000 + 200_000 * rng.integers(0, 9, n)  # many repeats, as the waits' times
    for x in (rng.integers(-50, 50, n), rng.integers(0, 1 << 62, n), times, times.astype(np.int32) // 7):
        kept = x.copy()
        got = distinct(x)
        assert got.dtype == x.dtype and got.tolist() == np.unique(x).tolist()
        assert x.tolist() == kept.tolist()  # the caller's array is left as it was


def test_distinct_of_none_and_of_one():
    assert distinct(np.array([], np.int64)).tolist() == []
    assert distinct(np.array([7, 7, 7])).tolist() == [7]
