"""The in-process alternative measured for trace.dat (docs/BENCHMARKS-HISTORY.md, "trace.dat vs its trace-cmd report
text"):
libtracecmd + libtraceevent through ctypes, iterating every record of a trace.dat ("count") and printing each with
tep_print_event into a trace_seq ("print", the event's INFO only: no plugins loaded, so not the report's text).

    python -m bench.tracecmd_ctypes FILE.dat ...
"""

from __future__ import annotations

import ctypes
import sys
import time


class TraceSeq(ctypes.Structure):
    _fields_ = [
        ("buffer", ctypes.c_char_p),
        ("buffer_size", ctypes.c_uint),
        ("len", ctypes.c_uint),
        ("readpos", ctypes.c_uint),
        ("state", ctypes.c_int),
    ]


CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)


def libraries() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    tc, te = ctypes.CDLL("libtracecmd.so.1"), ctypes.CDLL("libtraceevent.so.1")
    tc.tracecmd_open.restype = ctypes.c_void_p
    tc.tracecmd_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
    tc.tracecmd_get_tep.restype = ctypes.c_void_p
    tc.tracecmd_get_tep.argtypes = [ctypes.c_void_p]
    tc.tracecmd_close.argtypes = [ctypes.c_void_p]
    tc.tracecmd_iterate_events.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, CALLBACK, ctypes.c_void_p]
    te.trace_seq_init.argtypes = [ctypes.POINTER(TraceSeq)]
    te.trace_seq_reset.argtypes = [ctypes.POINTER(TraceSeq)]
    return tc, te


def measure(path: str, mode: str) -> tuple[float, int, int]:
    """Seconds, records and bytes of text for one pass over the file."""
    tc, te = libraries()
    start = time.perf_counter()
    handle = tc.tracecmd_open(path.encode(), 0)
    if not handle:
        raise SystemExit(f"{path}: libtracecmd could not open it")
    tep = tc.tracecmd_get_tep(handle)
    seq = TraceSeq()
    te.trace_seq_init(ctypes.byref(seq))
    counts = [0, 0]

    def each(_handle, record, _cpu, _data) -> int:
        counts[0] += 1
        if mode == "print":
            te.tep_print_event(
                ctypes.c_void_p(tep),
                ctypes.byref(seq),
                ctypes.c_void_p(record),
                b"%s-%d [%03d] %s: %s: %s",
                b"COMM",
                b"PID",
                b"CPU",
                b"TS",
                b"NAME",
                b"INFO",
            )
            counts[1] += seq.len
            te.trace_seq_reset(ctypes.byref(seq))
        return 0

    tc.tracecmd_iterate_events(handle, None, 0, CALLBACK(each), None)
    tc.tracecmd_close(handle)
    return time.perf_counter() - start, counts[0], counts[1]


def main() -> None:
    for path in sys.argv[1:]:
        for mode in ("count", "print"):
            secs, records, text = measure(path, mode)
            print(f"{path}: {mode} {secs:.3f} s, {records:,} records, {text:,} bytes of text")


if __name__ == "__main__":
    main()
