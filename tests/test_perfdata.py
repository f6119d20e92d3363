"""perf.data uploaded as it is (parsers/perfdata.py): recognised by its magic, its header read and a damaged one
refused with its byte offset, before perf runs (these tests do not need perf; tests/test_perfdata_script.py runs
it).

The captures (samples/README.md) were recorded in the sandbox with Debian's perf 6.1: a file with call chains and
block events, and a pipe-form file (`perf record -o -`) without call chains."""

from __future__ import annotations

import io
import struct

import pytest

from parsers import detect, perfdata
from parsers.common import ParseError, ParseReport
from tests.conftest import SAMPLES

FILE = SAMPLES / "sandbox-sched-block.perf.data"
PIPE = SAMPLES / "sandbox-sched.pipe.perf.data"


def _layout(data: bytes) -> perfdata.Layout:
    return perfdata.read_layout(io.BytesIO(data), len(data))


def _refusal(data: bytes) -> ParseError:
    with pytest.raises(ParseError) as e:
        for _ in perfdata.parse(io.BytesIO(data), ParseReport("p.data")):
            pass
    return e.value


@pytest.mark.parametrize("path", [FILE, PIPE], ids=["file", "pipe"])
def test_recognised_by_its_magic(path):
    data = path.read_bytes()
    assert detect.detect(data[:65536], "capture.bin") is perfdata


def test_the_headers_events():
    layout = _layout(FILE.read_bytes())
    assert not layout.pipe and layout.data_bytes == 477_816
    assert len(layout.tracepoints()) == 5 and layout.others() == []  # (perf record's dummy event left out)
    assert all(a.sample_type & perfdata.SAMPLE_CALLCHAIN for a in layout.tracepoints())
    args, notes = perfdata.script_args(layout, "p.data")
    assert args[2:] == ["-f", "-i", "p.data", "-F", "trace:comm,tid,cpu,time,event,trace,ip,sym,symoff,dso"]
    assert notes == []
    pipe = _layout(PIPE.read_bytes())
    assert pipe.pipe and len(pipe.tracepoints()) == 2
    args, _ = perfdata.script_args(pipe, "p.data")
    assert args[-1] == "trace:comm,tid,cpu,time,event,trace"  # no call chains: no ip (perf would print it inline)


def test_other_events_are_silenced_or_named():
    layout = _layout(FILE.read_bytes())
    layout.attrs += [perfdata.Attr(perfdata.TYPE_SOFTWARE, 0, 0x1A7), perfdata.Attr(3, 0, 0x1A7)]
    args, notes = perfdata.script_args(layout, "p.data")
    assert args[-2:] == ["-F", "sw:"]  # nothing printed of the software events
    assert notes == [
        "it also holds 2 events that are not tracepoints: not read (those of kind hardware cache are listed as "
        "skipped lines)"
    ]


def test_a_damaged_magic_or_the_first_format_is_refused():
    data = FILE.read_bytes()
    with pytest.raises(ParseError, match=r"c\.data, byte 0: not a perf\.data: the magic is b'PERFxxx2'"):
        detect.detect(b"PERFxxx2" + data[8:65536], "c.data")
    with pytest.raises(ParseError, match=r"byte 0: a perf\.data of perf's first file format \(PERFFILE\)"):
        detect.detect(b"PERFFILE" + data[8:65536], "c.data")


def _with(data: bytes, at: int, fmt: str, *values) -> bytes:
    buf = bytearray(data)
    struct.pack_into(fmt, buf, at, *values)
    return bytes(buf)


def test_a_file_cut_short_is_refused_with_its_offset():
    """perf script prints what it read of a file cut short and exits with 0: the header says where each section is,
    and a section past the end refuses the file."""
    data = FILE.read_bytes()
    e = _refusal(data[:300_000])
    assert (
        e.offset == 40 and "the data section (477,816 bytes at byte 1,064) goes past the end of the file" in e.message
    )
    assert "cut short" in str(e) and str(e).startswith("p.data, byte 40: ")
    e = _refusal(data[: 1064 + 477_816 + 8])  # the data whole, the feature sections' table cut
    assert e.offset == 40 and "the table of the" in e.message
    e = _refusal(data[:60])
    assert e.offset == 60 and "inside its 104-byte header" in e.message


@pytest.mark.parametrize(
    "at,fmt,value,offset,says",
    [
        (8, "<Q", 99, 8, "the header says it is 99 bytes long"),
        (16, "<Q", 8, 16, "an event's attributes are said to take 8 bytes"),
        (32, "<Q", 100, 32, "is not a multiple of 144"),
        (48, "<Q", 0, 48, "the data section is empty: perf record was stopped before it wrote its header"),
        (24, "<Q", 10 << 20, 24, "the attributes section"),
        (200 + 4, "<I", 4000, 204, "an event's attributes say they are 4000 bytes long"),
    ],
)
def test_a_damaged_header_is_refused_with_its_offset(at, fmt, value, offset, says):
    e = _refusal(_with(FILE.read_bytes(), at, fmt, value))
    assert e.offset == offset and says in e.message, str(e)


def test_a_pipe_file_without_its_attributes_is_refused():
    data = PIPE.read_bytes()
    e = _refusal(data[:16] + struct.pack("<IHH", 9, 0, 8) + data[16:])
    assert e.offset == 16 and "no event attributes" in e.message


def test_a_file_without_tracepoints_is_refused():
    data = FILE.read_bytes()
    layout = _layout(data)
    assert len(layout.attrs) == 6
    for i in range(6):  # every event made a hardware one
        data = _with(data, 200 + 144 * i, "<I", perfdata.TYPE_HARDWARE)
    e = _refusal(data)
    assert "holds no tracepoint events (its events are of kind hardware)" in e.message
    assert "perf record -e sched:sched_switch" in e.message


def test_events_without_times_are_refused():
    data = FILE.read_bytes()
    for i in range(5):
        at = 200 + 144 * i + 24
        (sample_type,) = struct.unpack_from("<Q", data, at)
        data = _with(data, at, "<Q", sample_type & ~perfdata.SAMPLE_TIME)
    assert "without the task or the time of each event" in _refusal(data).message


def test_perf_missing_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(perfdata, "PERF", "/nonexistent/perf")
    e = _refusal(FILE.read_bytes())
    assert "perf is not installed on the server" in e.message and "apt-get install linux-perf" in e.message
