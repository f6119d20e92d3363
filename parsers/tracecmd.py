"""`trace-cmd report` of a trace.dat run as a child process under limits, its output read as a stream.

Used by tracedat.py (which checks the file's layout first). The child gets resource limits (CPU time scaled to
the file, address space, the size of the temporary files it decompresses v7 trace data into, no core file); its
stdout is written 1 MiB at a time (coreutils' stdbuf) and read ahead by a thread into a bounded queue, so that
trace-cmd decodes while the text parser parses; it is killed when it writes nothing for STALL_SECONDS or more
than OUTPUT_PER_DATA_BYTE bytes of text per byte of trace data. Its exit status and what it said on stderr become
the refusal's message.
"""

from __future__ import annotations

import fcntl
import functools
import os
import queue
import resource
import select
import shutil
import signal
import subprocess
import threading

from .common import ParseError
from .tracedat_layout import Layout

TRACE_CMD = os.environ.get("STALLSCOPE_TRACE_CMD", "trace-cmd")
STALL_SECONDS = 60  # the child is killed when it writes nothing for this long
CPU_SECONDS_BASE, CPU_SECONDS_PER_MB = 60, 4  # its CPU time limit: ~30x what the samples take
MEMORY_BYTES = 2 << 30  # its address space
PIPE_PIECES = 32  # of up to 1 MiB: the report read ahead of the parser
OUTPUT_PER_DATA_BYTE = 64  # bytes of report text at most per byte of trace data (as stored and decompressed)
_TEMP_PREFIX = "/tmp/trace_cpu_data"  # where libtracecmd decompresses v7 trace data (unlinked only on a clean exit)
INSTALL_HINT = (
    "trace-cmd is not installed on the server, and reading a trace.dat needs it: install it (Debian/Ubuntu: "
    "`apt-get install trace-cmd`; `make run` and the Docker image do), or upload the output of "
    "`trace-cmd report -i <file>` instead"
)


class Report:
    """`trace-cmd report -i path` with its stdout read as a stream (readinto), under limits. stderr is kept (its
    first 64 KiB) for the messages."""

    def __init__(self, path: str, tmp: str, layout: Layout, size: int, filename: str):
        self.filename, self.layout, self.size = filename, layout, size
        self.text_bytes = 0
        self.stalled = False
        # a runaway decoder is stopped: the samples' reports are 1.6-6x their trace data (kernel stacks the most)
        self.max_text = OUTPUT_PER_DATA_BYTE * (layout.trace_bytes + layout.uncompressed_bytes) + (16 << 20)
        self.overflow = False
        if shutil.which(TRACE_CMD) is None:
            raise ParseError(INSTALL_HINT, filename=filename)
        self.version = version(TRACE_CMD)
        try:
            self.proc = subprocess.Popen(
                [*_unbuffered(), TRACE_CMD, "report", "-i", path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=tmp,
                start_new_session=True,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "LC_ALL": "C"},
            )
        except FileNotFoundError:
            raise ParseError(INSTALL_HINT, filename=filename) from None
        self._limit(layout, size)
        try:
            fcntl.fcntl(self.proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass
        self.err = bytearray()
        self._errors = threading.Thread(target=self._drain_stderr, name="trace-cmd stderr", daemon=True)
        self._errors.start()
        self.lock, self.closing = threading.Lock(), threading.Event()
        self.pieces: queue.Queue = queue.Queue(maxsize=PIPE_PIECES)
        self.piece, self.at, self.ended = b"", 0, False
        self._pump_thread = threading.Thread(target=self._pump, name="trace-cmd stdout", daemon=True)
        self._pump_thread.start()

    def _limit(self, layout: Layout, size: int) -> None:
        """Limits set on the running child (prlimit: no preexec_fn in a threaded server); it has not yet read the
        file when they take effect. Its temporary files are the decompressed trace data: at most that size."""
        pid = self.proc.pid
        cpu = CPU_SECONDS_BASE + CPU_SECONDS_PER_MB * (size + layout.uncompressed_bytes) // (1 << 20)
        limits = [
            (resource.RLIMIT_CPU, cpu),
            (resource.RLIMIT_AS, MEMORY_BYTES),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_FSIZE, layout.uncompressed_bytes + (16 << 20)),
        ]
        for which, value in limits:
            try:
                resource.prlimit(pid, which, (value, value))
            except (OSError, ValueError):  # it already ended: its status says how
                pass

    def _drain_stderr(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            if len(self.err) < (64 << 10):
                self.err += line

    def _pump(self) -> None:
        """Drains the child's stdout into `pieces` (bounded: PIPE_PIECES of up to 1 MiB) as fast as it writes, so that
        trace-cmd decodes while the parser parses; kills a child that writes nothing for STALL_SECONDS."""
        fd, total = self.proc.stdout.fileno(), 0
        try:
            while not self.closing.is_set():
                ready, _, _ = select.select([fd], [], [], STALL_SECONDS)
                if not ready:
                    self.stalled = True
                    self._kill()
                    break
                piece = os.read(fd, 1 << 20)
                if not piece:
                    break
                total += len(piece)
                if total > self.max_text:
                    self.overflow = True
                    self._kill()
                    break
                while not self.closing.is_set():
                    try:
                        self.pieces.put(piece, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        finally:
            self.pieces.put(None)  # room for it: the reader takes pieces until this one, or stop() drains them

    def readinto(self, buf) -> int:
        """Fills buf with the report's next bytes (the tokenizer works best on large chunks; the pump reads ahead
        meanwhile); 0 at its end."""
        view, got = memoryview(buf), 0
        while got < len(view) and not self.ended:
            if not self.piece:
                self.piece, self.at = self.pieces.get(), 0
                if self.piece is None:
                    self.ended = True
                    break
            n = min(len(self.piece) - self.at, len(view) - got)
            view[got : got + n] = self.piece[self.at : self.at + n]
            got += n
            self.at += n
            if self.at == len(self.piece):
                self.piece = b""
        self.text_bytes += got
        return got

    def _kill(self) -> None:
        """Ends the child if it still runs, and removes the temporary files it decompressed into."""
        with self.lock:
            if self.proc.poll() is None:
                leftovers = _temp_files(self.proc.pid)
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
                for name in leftovers:
                    try:
                        os.unlink(name)
                    except OSError:
                        pass

    def _await_exit(self) -> None:
        """Once its output has ended, the child is waited for (its stdout closes as it exits, a moment before its
        status can be read); it is killed only if it lingers."""
        if self.ended:
            try:
                self.proc.wait(timeout=STALL_SECONDS)
            except subprocess.TimeoutExpired:
                pass

    def stop(self) -> None:
        """Ends the child if it still runs, stops the pump and reaps the child."""
        self.closing.set()
        self._await_exit()
        self._kill()
        while True:  # unblocks the pump's put, then lets it end
            try:
                self.pieces.get_nowait()
            except queue.Empty:
                if not self._pump_thread.is_alive():
                    break
                self._pump_thread.join(0.05)
        self.proc.wait()
        self._errors.join()
        self.proc.stdout.close()
        self.proc.stderr.close()

    def failure(self) -> ParseError | None:
        """The error that refuses the file when trace-cmd failed (None when it ended well)."""
        if self.overflow:
            return ParseError(
                f"`trace-cmd report` wrote more than {self.max_text:,} bytes of text for "
                f"{self.layout.trace_bytes:,} bytes of trace data and was stopped (a damaged file?)",
                filename=self.filename,
            )
        if self.stalled:
            return ParseError(
                f"`trace-cmd report` wrote nothing for {STALL_SECONDS} s and was stopped (a damaged file?)",
                filename=self.filename,
            )
        self._await_exit()
        rc = self.proc.poll()
        if rc is None or rc == 0:
            return None
        self._errors.join(timeout=5)  # all it said
        said = self.stderr_text()
        if rc < 0:
            sig = signal.Signals(-rc).name
            why = {
                "SIGXCPU": "used up its CPU time limit",
                "SIGXFSZ": "wrote more temporary data than the file holds",
                "SIGKILL": "was stopped",
            }.get(sig, f"crashed ({sig})")
            return ParseError(
                f"`trace-cmd report` {why} while decoding the trace data (a damaged file?)"
                + (f": {said}" if said else ""),
                filename=self.filename,
            )
        return ParseError(
            f"`trace-cmd report` could not read it (exit status {rc})" + (f": {said}" if said else ""),
            filename=self.filename,
        )

    def stderr_text(self, limit: int = 400) -> str:
        text = " / ".join(ln.strip() for ln in self.err.decode("utf-8", "replace").splitlines() if ln.strip())
        return text[:limit] + ("..." if len(text) > limit else "")


def _temp_files(pid: int) -> list[str]:
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


@functools.cache
def _unbuffered() -> tuple[str, ...]:
    """`stdbuf -o 1M` when coreutils' stdbuf is there: trace-cmd's stdout (stdio, 4 KiB writes to a pipe) then writes
    1 MiB at a time. For the 10x benchmark capture: its system time 0.26 -> 0.08 s, and the reader wakes ~250 times
    instead of ~38,000."""
    return ("stdbuf", "-o", "1M") if shutil.which("stdbuf") else ()


@functools.cache
def version(command: str) -> str:
    """trace-cmd's version, from the first line of `trace-cmd -h` ('trace-cmd version 3.1.6 ...')."""
    try:
        out = subprocess.run([command, "-h"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    words = (out.stdout + out.stderr).decode("utf-8", "replace").split()
    at = words.index("version") if "version" in words else -1
    return words[at + 1] if 0 <= at < len(words) - 1 else "?"


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
