"""The file a decoder child reads (parsers/child.py DecodedFile): a regular file where it lies, any other stream
copied; the same tables either way, and the progress bar counts the file read in place."""

from __future__ import annotations

import io
import os

import pyarrow as pa
import pytest

from backend.ingest.files import CountingReader
from parsers import child, perfdata, tracedat
from parsers.common import ParseReport
from tests.conftest import SAMPLES

TRACE_DAT = SAMPLES / "real" / "ext4-jbd2" / "trace.dat"
PERF_DATA = SAMPLES / "sandbox-sched-block.perf.data"


def test_a_regular_file_is_read_where_it_lies(tmp_path):
    with open(TRACE_DAT, "rb") as f:
        file = child.DecodedFile(f, str(tmp_path), "trace.dat")
        assert file.path == f"/proc/self/fd/{f.fileno()}" and file.fds == (f.fileno(),)
        assert file.size == TRACE_DAT.stat().st_size
        assert f.tell() == file.size  # read, as a copy would have left it
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("where", ["in memory", "past its start"])
def test_any_other_stream_is_copied(tmp_path, where):
    data = TRACE_DAT.read_bytes()
    if where == "in memory":
        stream, want = io.BytesIO(data), data
    else:  # (a stream already read from: its rest, as before)
        stream = open(TRACE_DAT, "rb")
        stream.seek(100)
        want = data[100:]
    with stream:
        file = child.DecodedFile(stream, str(tmp_path), "trace.dat")
    assert file.fds == () and file.path == str(tmp_path / "trace.dat") and file.size == len(want)
    assert (tmp_path / "trace.dat").read_bytes() == want


def _tables(parse, path) -> tuple[dict[str, pa.Table], dict[str, pa.Table]]:
    """The tables parse(stream, report) makes of the file at `path` read in place and copied from memory."""
    out = []
    for stream in (open(path, "rb"), io.BytesIO(path.read_bytes())):
        with stream:
            batches: dict[str, list] = {}
            for table, batch in parse(stream, ParseReport(path.name)):
                batches.setdefault(table, []).append(batch)
        out.append({t: pa.Table.from_batches(b) for t, b in batches.items()})
    return out[0], out[1]


def test_a_trace_dat_read_in_place_gives_the_tables_of_its_copy():
    in_place, copied = _tables(tracedat.parse, TRACE_DAT)
    assert in_place.keys() == copied.keys() and in_place["sched_switch"].num_rows > 0
    for table in in_place:
        assert in_place[table].equals(copied[table]), table


def test_a_perf_data_read_in_place_gives_the_tables_of_its_copy():
    in_place, copied = _tables(perfdata.parse, PERF_DATA)
    assert in_place.keys() == copied.keys() and in_place
    for table in in_place:
        assert in_place[table].equals(copied[table]), table


def test_the_progress_counts_a_file_read_in_place():
    seen = []
    with open(TRACE_DAT, "rb") as f:
        reader = CountingReader(f, seen.append)
        child.DecodedFile(reader, "/nonexistent", "trace.dat")
    assert seen == [TRACE_DAT.stat().st_size]
