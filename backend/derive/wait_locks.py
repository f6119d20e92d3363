"""What each wait waits on and who holds it, found during the one scan of the calls for the waits' stacks
(`LocksInScan`, stacks.stacks_at_many's `more`)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from .. import locks
from . import wait_rows
from .frames import FrameKinds
from .stacks import concat_stacks, name_kinds, stacks_at, with_frames


class LocksInScan:
    """What each wait waits on (Stacks.reasons: `reasons`), its inferred holder (`held`, wait_rows.HolderFinder) and
    the holder's stack at the wait's line, found during the one scan of the calls (stacks_at_many's `more`): as the
    scan answers a window's waits, their stacks (those the trace recorded instead, when it did) give their locks, the
    locks their holders, and the holders' stacks are read from that window. `asked`: per wait, its holder's stack's
    index in the scan's last Stacks (-1: no holder)."""

    def __init__(self, n: int, line, pid, recorded, mine: np.ndarray, finder, names: list[str], frames: FrameKinds):
        self.n, self.line, self.pid, self.recorded, self.mine, self.finder = n, line, pid, recorded, mine, finder
        self.tasks = finder.tasks
        self.frames = frames
        self.kinds = name_kinds(names + recorded.names, frames)
        self.prims = {p.name: p for p in locks.PRIMITIVES}
        self.reasons: list = [None] * n
        self.seen = np.zeros(n, bool)
        self.held = wait_rows.Holders(n)
        self.asked = np.full(n, -1)
        self._count = 0

    def __call__(self, ks: np.ndarray, st) -> tuple[np.ndarray, np.ndarray] | None:
        """The holders' stacks to read, of the waits among the requests ks (their stacks: st)."""
        sel = np.flatnonzero(ks < self.n)  # (the others: wakers)
        if not len(sel):
            return None
        ws = ks[sel]
        rec = self.mine[ws]
        has = np.flatnonzero(rec >= 0)
        part = with_frames(st.take(sel), len(ws), has, self.recorded, rec[has])
        return self._found(ws, part.reasons(len(ws), self.frames, self.kinds))

    def _found(self, ws: np.ndarray, reasons: list) -> tuple[np.ndarray, np.ndarray]:
        self.seen[ws] = True
        need: dict[str, list[int]] = defaultdict(list)
        for i, r in zip(ws.tolist(), reasons):
            self.reasons[i] = r
            if r[3] is not None and self.prims[r[3]].release:
                need[r[3]].append(i)
        waits, pids = self.finder.find(
            self.held, {k: np.array(v, np.int64) for k, v in need.items()}, self.line, self.pid
        )
        self.asked[waits] = np.arange(self._count, self._count + len(waits))
        self._count += len(waits)
        return pids, self.line[waits]

    def rest(self, con, sid: int, calls: dict, st, hst):
        """The waits the scan did not answer (none asked by task nor by call): their locks from st (the waits' stacks,
        with those recorded), their holders, and the holders' stacks (a scan of their own) after hst's."""
        missing = np.flatnonzero(~self.seen)
        if not len(missing):
            return hst
        pids, lines = self._found(missing, st.take(missing).reasons(len(missing), self.frames, self.kinds))
        if not len(pids):
            return hst
        ok = np.ones(len(pids), bool)
        return concat_stacks(hst, stacks_at(con, sid, calls, (pids, ok), None, (lines, ok)))
