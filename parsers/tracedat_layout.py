"""The layout of a trace-cmd `trace.dat` (file versions 6 and 7), checked byte by byte before it is decoded.

trace-cmd itself says little about a damaged file (a v7 file cut in its middle gives an empty report and exit
status 0), so every structure the decoder will rely on is walked here first, and a problem is refused with the
byte offset where it is (man 5 trace-cmd.dat.v6 / trace-cmd.dat.v7):

* the initial format: magic `\\x17\\x08Dtracing`, the version string ("6" or "7"), endianness, long size, page size;
  v7: the compression algorithm ("none", "zstd", "zlib") and the offset of the first options section;
* v6: the header info (`header_page`, `header_event`), the ftrace and event format files, kallsyms, printk
  formats, saved cmdlines, the CPU count, the options and the `flyrecord` / `latency` data with each CPU's
  offset and size;
* v7: the chain of options sections and, for every section an option points to (header info, formats,
  kallsyms, printk, cmdlines, each buffer's trace data), its header (id, flags, size), its bounds and, when it
  is compressed, that it decompresses to its stated size; each chunk of compressed trace data as well, or only its
  header past each CPU's first chunk (for a decoder that decompresses the chunks itself and refuses a damaged one
  with its offset: libtracecmd's open reads the first ones, and crashes on a damaged one).

The result (`Layout`) says what the file carries that changes the meaning of its times (clock, offsets,
multipliers, time-shift, buffer instances): the decoder applies those, the ingest notes them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import struct
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO

MAGIC = b"\x17\x08\x44tracing"
VERSIONS = (6, 7)
MAX_CHUNK = 128 << 20  # a compressed chunk or section said to hold more than this is damage, not data
MAX_TRACE_CHUNK = 16 << 20  # a chunk of ring-buffer pages (trace-cmd writes ~10 pages a chunk)
MAX_EXPANSION = 64  # compressed trace data decompresses to at most this many times the file's size (samples: 2-8x)

# option ids (trace-cmd-private.h)
DONE, DATE, CPUSTAT, BUFFER, TRACECLOCK, UNAME, HOOK, OFFSET, CPUCOUNT, VERSION = range(10)
TIME_SHIFT, GUEST, TSC2NSEC, STRINGS = 12, 13, 14, 15
HEADER_INFO, FTRACE_EVENTS, EVENT_FORMATS, KALLSYMS, PRINTK, CMDLINES, BUFFER_TEXT = range(16, 23)
SECTION_NAMES = {
    HEADER_INFO: "header info",
    FTRACE_EVENTS: "ftrace event formats",
    EVENT_FORMATS: "event formats",
    KALLSYMS: "kallsyms",
    PRINTK: "printk formats",
    CMDLINES: "saved cmdlines",
    BUFFER: "trace data",
    BUFFER_TEXT: "latency trace text",
    DONE: "options",
}
SECTION_COMPRESSED = 1


class LayoutError(ValueError):
    """A structure of the file is not what the format says: at which byte, what was expected."""

    def __init__(self, offset: int, message: str):
        self.offset, self.what = offset, message
        super().__init__(f"byte {offset}: {message}")


@dataclass
class Buffer:
    name: str  # "" for the top instance
    clock: str | None
    latency: bool
    cpus: list[tuple[int, int, int]] = field(default_factory=list)  # (cpu, offset, size)


@dataclass
class Layout:
    version: int
    big_endian: bool
    long_size: int
    page_size: int
    compression: str = "none"
    compression_version: str = ""
    compression_at: int = 0  # the offset of its name
    cpus: int = 0
    buffers: list[Buffer] = field(default_factory=list)
    options: dict[int, list[bytes]] = field(default_factory=dict)  # every option's data, by id
    sections: dict[int, int] = field(default_factory=dict)  # section id -> its offset (v6: where its data begins)
    compressed_sections: int = 0
    compressed_chunks: int = 0
    trace_bytes: int = 0  # of trace data, as stored (compressed or not)
    uncompressed_bytes: int = 0  # of compressed trace data, once decompressed (as its chunks' headers say)
    chunks_decompressed: bool = True  # by the walk (else only their headers past each CPU's first chunk)

    def option_text(self, option: int) -> list[str]:
        return [d.split(b"\0", 1)[0].decode("utf-8", "replace").strip() for d in self.options.get(option, [])]

    def describe(self) -> str:
        """'trace.dat v7, zstd-compressed, 4 CPUs' as the Sources tab shows it."""
        what = f"trace.dat v{self.version}"
        if self.compression != "none":
            what += (
                f", {self.compression}-compressed ({self.compressed_sections} sections, "
                f"{self.compressed_chunks} chunks of trace data)"
            )
        return what + f", {'big' if self.big_endian else 'little'}-endian, {self.long_size * 8}-bit, {self.cpus} CPUs"


class _Reader:
    """Reads numbers and strings of the file's endianness at offsets into the file or into a block of it held in
    memory (an option, a section). An error names the file's byte: `base` + the offset for a block stored as is;
    for a decompressed section (`base` None), the section's own offset (`at`) and the offset inside its data."""

    def __init__(
        self,
        data: bytes | BinaryIO,
        size: int,
        big_endian: bool = False,
        *,
        what: str = "",
        base: int | None = 0,
        at: int = 0,
    ):
        self.data, self.size, self.what, self.base, self.at = data, size, what, base, at
        self.order = ">" if big_endian else "<"

    def error(self, at: int, message: str) -> LayoutError:
        if self.base is None:
            return LayoutError(self.at, f"in the decompressed {self.what}, at its byte {at}: {message}")
        return LayoutError(self.base + at, message)

    def bytes(self, at: int, n: int, what: str) -> bytes:
        if n < 0 or at < 0 or at + n > self.size:
            end = (
                f"the {self.what} ends {self.size - at} bytes after it"
                if self.what
                else f"the file ends at byte {self.size} (truncated?)"
            )
            raise self.error(at, f"{what}: needs {n} bytes, {end}")
        if isinstance(self.data, (bytes, bytearray, memoryview)):
            return bytes(self.data[at : at + n])
        self.data.seek(at)
        got = self.data.read(n)
        if len(got) != n:
            raise self.error(at, f"{what}: the file ends early")
        return got

    def num(self, at: int, n: int, what: str) -> int:
        return struct.unpack(self.order + {2: "H", 4: "I", 8: "Q"}[n], self.bytes(at, n, what))[0]

    def cstring(self, at: int, what: str, limit: int = 4096) -> tuple[str, int]:
        """A NUL-terminated string and the offset after its NUL."""
        room = max(min(limit, self.size - at), 0)
        raw = self.bytes(at, room, what)
        end = raw.find(b"\0")
        if end < 0:
            raise self.error(at, f"{what}: no terminating NUL within {room} bytes")
        return raw[:end].decode("utf-8", "replace"), at + end + 1


class _Zstd:
    """libzstd's one-shot decompression through ctypes (the library trace-cmd itself links against); one instance
    (find_library runs `ldconfig -p`: 5-20 ms a walk)."""

    @staticmethod
    @functools.cache
    def loaded() -> _Zstd:
        return _Zstd()

    def __init__(self):
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            raise RuntimeError(f"libzstd is not installed ({e}): zstd-compressed trace.dat files need it") from e
        lib.ZSTD_decompress.restype = ctypes.c_size_t
        lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
        lib.ZSTD_getErrorName.restype = ctypes.c_char_p
        lib.ZSTD_getErrorName.argtypes = [ctypes.c_size_t]
        self.lib = lib

    def __call__(self, data: bytes, size: int) -> bytes:
        out = ctypes.create_string_buffer(max(size, 1))
        got = self.lib.ZSTD_decompress(out, size, data, len(data))
        if self.lib.ZSTD_isError(got):
            raise ValueError(self.lib.ZSTD_getErrorName(got).decode())
        if got != size:
            raise ValueError(f"gave {got} bytes, not the {size} stated")
        return out.raw[:size]


def _inflate(data: bytes, size: int) -> bytes:
    try:
        out = zlib.decompress(data)
    except zlib.error as e:
        raise ValueError(str(e)) from e
    if len(out) != size:
        raise ValueError(f"gave {len(out)} bytes, not the {size} stated")
    return out


class _Walker:
    def __init__(self, stream: BinaryIO, size: int, decompress_chunks: bool = True):
        self.file = _Reader(stream, size)
        self.size = size
        self.decompress = None
        self.decompress_chunks = decompress_chunks

    # -- the initial format, both versions ---------------------------------------------------------------------
    def initial(self) -> tuple[Layout, int]:
        f = self.file
        magic = f.bytes(0, min(10, self.size), "the magic")
        if magic != MAGIC:
            raise LayoutError(0, f"not a trace-cmd trace.dat: the magic is {magic!r}, expected {MAGIC!r}")
        text, at = f.cstring(10, "the file version", limit=16)
        if not text.isdigit() or int(text) not in VERSIONS:
            raise LayoutError(
                10,
                f"unknown trace.dat file version {text!r} (versions 6 and 7 are read; "
                "`trace-cmd convert` makes a version 6 or 7 file)",
            )
        endian = f.bytes(at, 1, "the endianness")[0]
        if endian not in (0, 1):
            raise LayoutError(at, f"endianness byte is {endian}, expected 0 (little) or 1 (big)")
        long_size = f.bytes(at + 1, 1, "the long size")[0]
        if long_size not in (4, 8):
            raise LayoutError(at + 1, f"long size is {long_size}, expected 4 or 8")
        f.order = ">" if endian else "<"
        page_size = f.num(at + 2, 4, "the page size")
        if page_size < 64 or page_size > (1 << 24) or page_size & (page_size - 1):
            raise LayoutError(at + 2, f"page size {page_size} is not a power of two between 64 and 16 MiB")
        return Layout(int(text), bool(endian), long_size, page_size), at + 6

    def walk(self) -> Layout:
        layout, at = self.initial()
        layout.chunks_decompressed = self.decompress_chunks
        if layout.version == 6:
            self.v6(layout, at)
        else:
            self.v7(layout, at)
        return layout

    def block(self, layout: Layout, data: bytes, what: str, base: int | None, at: int) -> _Reader:
        return _Reader(data, len(data), layout.big_endian, what=what, base=base, at=at)

    # -- the metadata, in the order v6 stores it; v7 stores each part in a section of its own -------------------
    def header_info(self, r: _Reader, at: int) -> int:
        for tag in (b"header_page\0", b"header_event\0"):
            name = tag[:-1].decode()
            got = r.bytes(at, len(tag), f"the {name} tag")
            if got != tag:
                raise r.error(at, f"expected {name!r} (the header info), found {got!r}")
            size = r.num(at + len(tag), 8, f"the {name} size")
            if size > (1 << 20):
                raise r.error(at + len(tag), f"the {name} format is said to be {size} bytes: not plausible")
            r.bytes(at + len(tag) + 8, size, f"the {name} format")
            at += len(tag) + 8 + size
        return at

    def format_files(self, r: _Reader, at: int, what: str) -> int:
        count = r.num(at, 4, f"the number of {what}")
        at += 4
        for i in range(count):
            size = r.num(at, 8, f"the size of {what} #{i + 1}")
            if size > (1 << 20):
                raise r.error(at, f"{what} #{i + 1} is said to be {size} bytes: not plausible")
            r.bytes(at + 8, size, f"{what} #{i + 1}")
            at += 8 + size
        return at

    def event_formats(self, r: _Reader, at: int) -> int:
        systems = r.num(at, 4, "the number of event systems")
        at += 4
        for _ in range(systems):
            name, at = r.cstring(at, "an event system's name")
            at = self.format_files(r, at, f"event formats of system {name!r}")
        return at

    def sized_blob(self, r: _Reader, at: int, width: int, what: str) -> int:
        size = r.num(at, width, f"the size of the {what}")
        if size:
            r.bytes(at + width + size - 1, 1, f"the {what} ({size} bytes from byte {at + width})")
        return at + width + size

    def metadata(self, r: _Reader, section: int, at: int) -> int:
        if section == HEADER_INFO:
            return self.header_info(r, at)
        if section == FTRACE_EVENTS:
            return self.format_files(r, at, "ftrace event formats")
        if section == EVENT_FORMATS:
            return self.event_formats(r, at)
        if section in (KALLSYMS, PRINTK):
            return self.sized_blob(r, at, 4, SECTION_NAMES[section])
        return self.sized_blob(r, at, 8, SECTION_NAMES[section])  # CMDLINES

    # -- version 6 ---------------------------------------------------------------------------------------------
    def v6(self, layout: Layout, at: int) -> None:
        f = self.file
        for section in (HEADER_INFO, FTRACE_EVENTS, EVENT_FORMATS, KALLSYMS, PRINTK, CMDLINES):
            layout.sections[section] = at
            at = self.metadata(f, section, at)
        layout.cpus = f.num(at, 4, "the CPU count")
        if layout.cpus > 8192:
            raise LayoutError(at, f"CPU count {layout.cpus} is not plausible")
        at += 4
        kind = f.bytes(at, 10, "the data kind ('options', 'flyrecord' or 'latency')")
        buffers = []
        if kind.startswith(b"options"):
            at, buffers = self.v6_options(layout, at + 10)
            kind = f.bytes(at, 10, "the data kind ('flyrecord' or 'latency')")
        layout.buffers.append(self.v6_data(layout, "", kind, at))
        for option_at, data in buffers:  # buffer instances: "<offset8><name>\0", their data at that offset
            r = self.block(layout, data, "BUFFER option", option_at, option_at)
            offset = r.num(0, 8, "the buffer's offset")
            name, _ = r.cstring(8, "the buffer's name")
            if offset >= self.size:
                raise r.error(
                    0,
                    f"buffer instance {name!r} is said to start at byte {offset}, past the end of the "
                    f"file ({self.size} bytes): truncated?",
                )
            kind = f.bytes(offset, 10, f"the data kind of buffer instance {name!r}")
            layout.buffers.append(self.v6_data(layout, name, kind, offset))

    def v6_options(self, layout: Layout, at: int) -> tuple[int, list[tuple[int, bytes]]]:
        f, buffers = self.file, []
        while True:
            option = f.num(at, 2, "an option id")
            if option == DONE:
                return at + 2, buffers
            size = f.num(at + 2, 4, f"the size of option {option}")
            data = f.bytes(at + 6, size, f"option {option}")
            layout.options.setdefault(option, []).append(data)
            if option == BUFFER:
                buffers.append((at + 6, data))
            at += 6 + size

    def v6_data(self, layout: Layout, name: str, kind: bytes, at: int) -> Buffer:
        f = self.file
        if kind == b"latency  \0":
            return Buffer(name, None, True)
        if kind != b"flyrecord\0":
            raise LayoutError(at, f"expected 'flyrecord' or 'latency' (the trace data), found {kind!r}")
        buf = Buffer(name, None, False)
        at += 10
        for cpu in range(layout.cpus):
            offset = f.num(at, 8, f"CPU {cpu}'s data offset")
            size = f.num(at + 8, 8, f"CPU {cpu}'s data size")
            if size and offset + size > self.size:
                raise LayoutError(
                    at,
                    f"CPU {cpu}'s trace data is said to lie at bytes {offset}-{offset + size}, "
                    f"past the end of the file ({self.size} bytes): truncated?",
                )
            buf.cpus.append((cpu, offset, size))
            layout.trace_bytes += size
            at += 16
        return buf

    # -- version 7 ---------------------------------------------------------------------------------------------
    def compression(self, at: int) -> tuple[str, int]:
        """v7: the compression algorithm's name, at `at` (after the initial format), and where what follows it starts."""
        return self.file.cstring(at, "the compression algorithm", limit=64)

    def v7(self, layout: Layout, at: int) -> None:
        f = self.file
        layout.compression, after = self.compression(at)
        layout.compression_at = at
        layout.compression_version, after = f.cstring(after, "the compression version", limit=64)
        if layout.compression == "zstd":
            self.decompress = _Zstd.loaded()
        elif layout.compression == "zlib":
            self.decompress = _inflate
        elif layout.compression != "none":
            raise LayoutError(
                at, f"unknown compression algorithm {layout.compression!r} (none, zstd and zlib are read)"
            )
        first = after
        at = f.num(after, 8, "the offset of the first options section")
        seen, buffers = set(), []
        while at:
            if at in seen:
                raise LayoutError(at, "the options sections form a loop")
            seen.add(at)
            data, base = self.section(layout, at, DONE)
            at = self.v7_options(layout, self.block(layout, data, "options section", base, at), buffers)
        for section, offset in layout.sections.items():
            data, base = self.section(layout, offset, section)
            self.metadata(self.block(layout, data, f"{SECTION_NAMES[section]} section", base, offset), section, 0)
        for option, r in buffers:
            layout.buffers.append(self.v7_buffer(layout, option, r))
        if HEADER_INFO not in layout.sections:
            raise LayoutError(
                first,
                "the file has no header info section (no HEADER_INFO option): its ring-buffer pages cannot be decoded",
            )
        if EVENT_FORMATS not in layout.sections and FTRACE_EVENTS not in layout.sections:
            raise LayoutError(first, "the file has no event format section: its events cannot be decoded")
        if not layout.buffers:
            raise LayoutError(first, "the file holds no trace data (no BUFFER or BUFFER_TEXT option)")
        layout.cpus = max(len(b.cpus) for b in layout.buffers)

    def section(self, layout: Layout, at: int, expected: int) -> tuple[bytes, int | None]:
        """A section's data (decompressed when it is compressed) and, when it is stored as is, its file offset."""
        f = self.file
        what = SECTION_NAMES.get(expected, f"section {expected}")
        if at >= self.size:
            raise LayoutError(
                at,
                f"the {what} section is said to start here, past the end of the file ({self.size} bytes): truncated?",
            )
        sid = f.num(at, 2, f"the {what} section's id")
        flags = f.num(at + 2, 2, f"the {what} section's flags")
        size = f.num(at + 8, 8, f"the {what} section's size")
        if sid != expected:
            raise LayoutError(at, f"expected the {what} section (id {expected}), found a section with id {sid}")
        data_at = at + 16
        if data_at + size > self.size:
            raise LayoutError(
                at + 8,
                f"the {what} section is said to be {size} bytes, past the end of the file "
                f"({self.size} bytes): truncated?",
            )
        if expected in (BUFFER, BUFFER_TEXT):  # trace data: read per CPU, in chunks when compressed
            return b"", data_at
        if not flags & SECTION_COMPRESSED:
            return f.bytes(data_at, size, f"the {what} section"), data_at
        layout.compressed_sections += 1
        return self.inflate(layout, data_at, size, f"the {what} section"), None

    def block_sizes(self, at: int, room: int, what: str) -> tuple[int, int]:
        """A compressed block at `at` (<compressed size4><size4><data>): its compressed size and the size it says it
        decompresses to, checked against its `room` and the plausible."""
        f = self.file
        if self.decompress is None:
            raise LayoutError(at, f"{what} is marked compressed, but the file names no compression algorithm")
        csize, usize = f.num(at, 4, f"{what}'s compressed size"), f.num(at + 4, 4, f"{what}'s size")
        if csize + 8 > room:
            raise LayoutError(at, f"{what}: {csize} compressed bytes do not fit in its {room} bytes")
        if usize > min(MAX_CHUNK, MAX_EXPANSION * self.size + MAX_TRACE_CHUNK):
            raise LayoutError(at + 4, f"{what} is said to decompress to {usize} bytes: not plausible")
        return csize, usize

    def inflate(self, layout: Layout, at: int, room: int, what: str) -> bytes:
        """A compressed block at `at`, within `room` bytes, decompressed."""
        csize, usize = self.block_sizes(at, room, what)
        try:
            return self.decompress(self.file.bytes(at + 8, csize, what), usize)
        except ValueError as e:
            raise LayoutError(at + 8, f"{what} does not decompress with {layout.compression}: {e}") from None

    def v7_options(self, layout: Layout, r: _Reader, buffers: list) -> int:
        """Reads one options section's options; returns the next section's offset (0: none)."""
        at = 0
        while True:
            option = r.num(at, 2, "an option id")
            size = r.num(at + 2, 4, f"the size of option {option}")
            r.bytes(at + 6, size, f"option {option}")
            body = self.block(
                layout,
                r.data[at + 6 : at + 6 + size],
                f"option {option}",
                None if r.base is None else r.base + at + 6,
                r.at,
            )
            if option == DONE:
                return body.num(0, 8, "the next options section's offset")
            if HEADER_INFO <= option <= CMDLINES:
                layout.sections[option] = body.num(0, 8, f"the offset of the {SECTION_NAMES[option]} section")
            else:
                layout.options.setdefault(option, []).append(body.data)
            if option in (BUFFER, BUFFER_TEXT):
                buffers.append((option, body))
            at += 6 + size

    def v7_buffer(self, layout: Layout, option: int, r: _Reader) -> Buffer:
        offset = r.num(0, 8, "the buffer's offset")
        name, at = r.cstring(8, "the buffer's name")
        clock, at = r.cstring(at, "the buffer's clock")
        _, data_at = self.section(layout, offset, option)
        compressed = bool(self.file.num(offset + 2, 2, "the trace data's flags") & SECTION_COMPRESSED)
        if option == BUFFER_TEXT:
            if compressed:
                size = self.file.num(offset + 8, 8, "the latency text's size")
                self.chunks(layout, data_at, size - 4, "the latency text")
            return Buffer(name, clock, True)
        buf = Buffer(name, clock, False)
        page = r.num(at, 4, "the buffer's page size") or layout.page_size
        count = r.num(at + 4, 4, "the buffer's CPU count")
        at += 8
        for _ in range(count):
            cpu = r.num(at, 4, "a CPU id")
            cpu_at, size = r.num(at + 4, 8, f"CPU {cpu}'s data offset"), r.num(at + 12, 8, f"CPU {cpu}'s data size")
            if size and (cpu_at < data_at or cpu_at + size > self.size):
                raise r.error(
                    at,
                    f"CPU {cpu}'s trace data of buffer {name or 'top'!r} is said to lie at bytes "
                    f"{cpu_at}-{cpu_at + size}, outside its section (from byte {data_at}) or the file "
                    f"({self.size} bytes): truncated?",
                )
            at += 20
            if size and compressed:
                self.chunks(layout, cpu_at, size, f"CPU {cpu}'s trace data", page)
            buf.cpus.append((cpu, cpu_at, size))
            layout.trace_bytes += size
        return buf

    def chunks(self, layout: Layout, at: int, size: int, what: str, page: int | None = None) -> None:
        """Compressed trace data: <count4> then count x <compressed size4><size4><data>; each is decompressed (or
        only its header checked). The size trace-cmd stores for it leaves out the count (and trace-cmd does not
        check it). A chunk of ring-buffer pages holds whole pages (`page`): anything else is damage, refused before it
        is decompressed."""
        end = min(at + 4 + size, self.size)
        count = self.file.num(at, 4, f"{what}'s chunk count")
        if count * 8 > end - at - 4:
            raise LayoutError(at, f"{what} is said to hold {count} chunks, more than its {end - at - 4} bytes can")
        at += 4
        for i in range(count):
            usize = self.file.num(at + 4, 4, f"chunk {i + 1} of {what}'s size")
            if page and (usize == 0 or usize % page or usize > MAX_TRACE_CHUNK):
                raise LayoutError(
                    at + 4,
                    f"chunk {i + 1} of {what} is said to hold {usize} bytes, not a whole number of {page}-byte pages "
                    f"up to {MAX_TRACE_CHUNK >> 20} MiB",
                )
            if layout.uncompressed_bytes + usize > MAX_EXPANSION * self.size + MAX_TRACE_CHUNK:
                raise LayoutError(
                    at + 4,
                    f"the compressed trace data would decompress to more than {MAX_EXPANSION} times the file's size: "
                    "not plausible (a damaged or hostile file)",
                )
            if self.decompress_chunks or i == 0:  # (libtracecmd's open reads each CPU's first chunk)
                layout.uncompressed_bytes += len(self.inflate(layout, at, end - at, f"chunk {i + 1} of {what}"))
            else:
                layout.uncompressed_bytes += self.block_sizes(at, end - at, f"chunk {i + 1} of {what}")[1]
            at += 8 + self.file.num(at, 4, "a chunk's size")
            layout.compressed_chunks += 1


def read_layout(stream: BinaryIO, size: int, decompress_chunks: bool = True) -> Layout:
    """Walks a whole trace.dat (seekable stream of `size` bytes); raises LayoutError at the first problem. The chunks
    of compressed trace data are decompressed, or (`decompress_chunks` False) only their headers past each CPU's or
    text's first chunk."""
    return _Walker(stream, size, decompress_chunks).walk()
