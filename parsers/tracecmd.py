"""`trace-cmd report` of a trace.dat run as a child process under limits, its output read as a stream.

Used by tracedat.py (which checks the file's layout first). The child (child.ChildText) gets resource limits (CPU
time scaled to the file, address space, the size of the temporary files it decompresses v7 trace data into, no core
file); its stdout is written 1 MiB at a time and read ahead by a thread into a bounded queue, so that trace-cmd
decodes while the text parser parses; it is killed when it writes nothing for STALL_SECONDS or more than
OUTPUT_PER_DATA_BYTE bytes of text per byte of trace data. Its exit status and what it said on stderr become the
refusal's message.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess

from . import child
from .common import ParseError
from .tracedat_layout import Layout

TRACE_CMD = os.environ.get("STALLSCOPE_TRACE_CMD", "trace-cmd")
STALL_SECONDS = 60  # the child is killed when it writes nothing for this long
CPU_SECONDS_BASE, CPU_SECONDS_PER_MB = 60, 4  # its CPU time limit: ~30x what the samples take
MEMORY_BYTES = 2 << 30  # its address space
OUTPUT_PER_DATA_BYTE = 64  # bytes of report text at most per byte of trace data (as stored and decompressed)
_TEMP_PREFIX = "/tmp/trace_cpu_data"  # where libtracecmd decompresses v7 trace data (unlinked only on a clean exit)
INSTALL_HINT = (
    "trace-cmd is not installed on the server, and reading a trace.dat needs it: install it (Debian/Ubuntu: "
    "`apt-get install trace-cmd`; `make run` and the Docker image do), or upload the output of "
    "`trace-cmd report -i <file>` instead"
)


class Report(child.ChildText):
    """`trace-cmd report -i path` with its stdout read as a stream (readinto), under limits. stderr is kept (its
    first 64 KiB) for the messages."""

    def __init__(self, path: str, tmp: str, layout: Layout, size: int, filename: str, fds: tuple[int, ...] = ()):
        self.layout, self.size = layout, size
        if shutil.which(TRACE_CMD) is None:
            raise ParseError(INSTALL_HINT, filename=filename)
        self.version = version(TRACE_CMD)
        # Limits: its temporary files are the decompressed trace data, at most that size. A runaway decoder is
        # stopped: the samples' reports are 1.6-6x their trace data (kernel stacks the most).
        cpu = CPU_SECONDS_BASE + CPU_SECONDS_PER_MB * (size + layout.uncompressed_bytes) // (1 << 20)
        super().__init__(
            [TRACE_CMD, "report", "-i", path],
            cwd=tmp,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "LC_ALL": "C"},
            limits=[
                (resource.RLIMIT_CPU, cpu),
                (resource.RLIMIT_AS, MEMORY_BYTES),
                (resource.RLIMIT_CORE, 0),
                (resource.RLIMIT_FSIZE, layout.uncompressed_bytes + (16 << 20)),
            ],
            max_text=OUTPUT_PER_DATA_BYTE * (layout.trace_bytes + layout.uncompressed_bytes) + (16 << 20),
            stall_seconds=STALL_SECONDS,
            tool="`trace-cmd report`",
            data_bytes=layout.trace_bytes,
            what="trace data",
            filename=filename,
            install_hint=INSTALL_HINT,
            pass_fds=fds,
        )

    def leftovers(self) -> list[str]:
        return temp_files(self.proc.pid)


def temp_files(pid: int) -> list[str]:
    """The temporary files a running trace-cmd holds open (v7's decompressed trace data)."""
    names = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(_TEMP_PREFIX):
                names.append(target)
    except OSError:
        pass
    return names


def version(command: str) -> str:
    """trace-cmd's version, from the first line of `trace-cmd -h` ('trace-cmd version 3.1.6 ...')."""
    return child.version(command, "-h")


@functools.cache
def compressions(command: str) -> tuple[str, ...]:
    """The compression algorithms trace-cmd can read (`trace-cmd list -c`: 'Supported compression algorithms:' then
    'zstd, 1.5.4' lines); Debian's has zstd only."""
    try:
        out = subprocess.run([command, "list", "-c"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    lines = out.stdout.decode("utf-8", "replace").splitlines()
    return tuple(ln.split(",")[0].strip() for ln in lines if ln.startswith(("\t", " ")) and ln.strip())
