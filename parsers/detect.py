"""Decides a file's format from its content; the file name is only a tie-breaker.

Each parser module scores the first lines (sniff); the best score above a threshold wins.
"""

from __future__ import annotations

from types import ModuleType

from . import blkparse, blktrace, funcgraph, offcpu, perf, perfdata, tracedat
from .common import ParseError, head_lines

PARSERS: list[ModuleType] = [blkparse, offcpu, funcgraph, perf]  # perf script text: ftrace's tables (FORMAT ftrace)
BY_FORMAT = {p.FORMAT: p for p in PARSERS if p is not perf}  # (perf script text is read as the ftrace format)
THRESHOLD = 0.3
SNIFF_BYTES = 64 << 10


def detect(head: bytes, filename: str) -> ModuleType:
    """The parser for a file whose first bytes are `head`, or ParseError saying why none fits."""
    if blktrace.recognise(head, filename):  # binary records by their magic, or an empty per-CPU file of a set
        return blktrace
    if not head.strip():
        raise ParseError("the file is empty", filename=filename)
    if tracedat.recognise(head, filename):  # binary, known by its magic (a damaged one is refused there)
        return tracedat
    if perfdata.recognise(head, filename):  # perf.data: binary, known by its magic, as a trace.dat
        return perfdata
    sample = head[:4096]
    if b"\0" in sample or sum(b < 9 or 13 < b < 32 for b in sample) > len(sample) // 20:
        raise ParseError(
            f"this is a binary file of an unknown kind (its first bytes: {head[:8].hex(' ')}); Stallscope reads blktrace "
            "binary files (per-CPU NAME.blktrace.N, blkparse -d dumps), trace-cmd's trace.dat, perf's perf.data and "
            "text traces (blkparse output, ftrace/trace-cmd report text, perf script text, bcc offcputime output)",
            filename=filename,
            offset=0,
        )
    lines = head_lines(head)
    scores = sorted(((p.sniff(lines), i, p) for i, p in enumerate(PARSERS)), key=lambda s: (-s[0], s[1]))
    best, _, parser = scores[0]
    if best < THRESHOLD:
        first = next((ln for ln in lines if ln.strip()), "")[:120]
        raise ParseError(
            f"unknown format: none of {', '.join(BY_FORMAT)} matches the first lines (line 1: {first!r})",
            filename=filename,
            line=1,
        )
    return parser
