"""A decoder run as a child process under limits, its text output read as a stream: `trace-cmd report` of a trace.dat
(tracecmd.py) and `perf script` of a perf.data (perfdata.py).

The child gets resource limits (set with prlimit once it runs: no preexec_fn in a threaded server; it has not read
its file yet when they take effect); its stdout is written 1 MiB at a time (coreutils' stdbuf) and read ahead by a
thread into a bounded queue, so that the child decodes while the text parser parses; it is killed when it writes
nothing for `stall_seconds` or more than `max_text` bytes of text. Its exit status and what it said on stderr become
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
import stat
import subprocess
import threading
from typing import BinaryIO, Callable, Iterator

from .common import ParseError

PIPE_PIECES = 32  # of up to 1 MiB: the output read ahead of the parser
COPY_BYTES = 1 << 20


class DecodedFile:
    """The file a decoder reads at `path` (`size` bytes): the stream's own file when the stream is a regular file read
    from its start (the CLI's files, an upload spooled to disk), read where it lies through its descriptor (`fds`,
    which the child inherits; the stream is left at its end); otherwise (an upload read as it arrives, any other
    stream) a copy in `tmp`, read to the stream's end: the decoders seek."""

    def __init__(self, stream: BinaryIO, tmp: str, name: str):
        fd = _regular_file(stream)
        if fd is not None:
            self.path, self.size, self.fds = f"/proc/self/fd/{fd}", os.fstat(fd).st_size, (fd,)
            stream.seek(0, os.SEEK_END)  # (read: a progress bar counts it)
            return
        self.path, self.size, self.fds = os.path.join(tmp, name), 0, ()
        buf = bytearray(COPY_BYTES)
        with open(self.path, "wb") as out, memoryview(buf) as view:
            while got := stream.readinto(view):
                out.write(view[:got])
                self.size += got


def _regular_file(stream: BinaryIO) -> int | None:
    """The descriptor of a stream that is a regular file at its start, else None."""
    try:
        fd = stream.fileno()
        if stream.tell() != 0 or not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation is an OSError and a ValueError)
        return None
    return fd


class ChildText:
    """`args` run in `cwd` with `env`, its stdout read as a stream (readinto), under `limits` ([(RLIMIT_*, value)]).
    `tool` names it in messages (`trace-cmd report`); it decodes `data_bytes` bytes of `what` (trace data). stderr is
    kept (its first 64 KiB) for the messages."""

    def __init__(
        self,
        args: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        limits: list[tuple[int, int]],
        max_text: int,
        stall_seconds: float,
        tool: str,
        data_bytes: int,
        what: str,
        filename: str,
        install_hint: str,
        stdin: bool = False,
        pass_fds: tuple[int, ...] = (),
    ):
        self.tool, self.data_bytes, self.what, self.filename = tool, data_bytes, what, filename
        self.max_text, self.stall_seconds = max_text, stall_seconds
        self.text_bytes = 0
        self.stalled = self.overflow = False
        try:
            self.proc = subprocess.Popen(
                [*_unbuffered(), *args],
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                start_new_session=True,
                env=env,
                pass_fds=pass_fds,
            )
        except FileNotFoundError:
            raise ParseError(install_hint, filename=filename) from None
        for which, value in limits:
            try:
                resource.prlimit(self.proc.pid, which, (value, value))
            except (OSError, ValueError):  # it already ended: its status says how
                pass
        try:
            fcntl.fcntl(self.proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass
        self.err = bytearray()
        self._errors = threading.Thread(target=self._drain_stderr, name=f"{tool} stderr", daemon=True)
        self._errors.start()
        self.lock, self.closing = threading.Lock(), threading.Event()
        self.pieces: queue.Queue = queue.Queue(maxsize=PIPE_PIECES)
        self.piece, self.at, self.ended = b"", 0, False
        self._pump_thread = threading.Thread(target=self._pump, name=f"{tool} stdout", daemon=True)
        self._pump_thread.start()

    def tell(self, text: str) -> None:
        """Writes `text` on the child's stdin (`stdin=True`) and closes it; a child that ended, or reads no more, is
        left to its status."""
        if not self.proc.stdin or self.proc.stdin.closed:  # (said already)
            return
        try:
            fcntl.fcntl(self.proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)  # a line for thousands of CPUs at once
        except OSError:
            pass
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def _drain_stderr(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            if len(self.err) < (64 << 10):
                self.err += line

    def _pump(self) -> None:
        """Drains the child's stdout into `pieces` (bounded: PIPE_PIECES of up to 1 MiB) as fast as it writes, so that
        the child decodes while the parser parses; kills a child that writes nothing for stall_seconds."""
        fd, total = self.proc.stdout.fileno(), 0
        try:
            while not self.closing.is_set():
                ready, _, _ = select.select([fd], [], [], self.stall_seconds)
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
        """Fills buf with the output's next bytes (the tokenizers work best on large chunks; the pump reads ahead
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

    def leftovers(self) -> list[str]:
        """Files the running child leaves behind when killed (removed after the kill); none here."""
        return []

    def _kill(self) -> None:
        """Ends the child if it still runs, and removes what it leaves behind."""
        with self.lock:
            if self.proc.poll() is None:
                leftovers = self.leftovers()
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
                self.proc.wait(timeout=self.stall_seconds)
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
        """The error that refuses the file when the child failed (None when it ended well)."""
        if self.overflow:
            return ParseError(
                f"{self.tool} wrote more than {self.max_text:,} bytes of text for {self.data_bytes:,} bytes of "
                f"{self.what} and was stopped (a damaged file?)",
                filename=self.filename,
            )
        if self.stalled:
            return ParseError(
                f"{self.tool} wrote nothing for {self.stall_seconds} s and was stopped (a damaged file?)",
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
                f"{self.tool} {why} while decoding the {self.what} (a damaged file?)" + (f": {said}" if said else ""),
                filename=self.filename,
            )
        return ParseError(
            f"{self.tool} could not read it (exit status {rc})" + (f": {said}" if said else ""),
            filename=self.filename,
        )

    def parsed(self, parse_text: Callable[[ChildText], Iterator]) -> Iterator:
        """What parse_text yields reading this child's output, then the child stopped. The child's own failure
        refuses the file rather than the text reader's refusal of what it wrote (a text that ended early); a text
        refused while the child still ran is said to be in the tool's output."""
        try:
            yield from parse_text(self)
        except ParseError as e:
            failure = self.failure() if self.ended else None
            if failure:
                raise failure from None
            raise ParseError(f"{e.message} (in the output of {self.tool})", filename=e.filename, line=e.line) from None
        finally:
            self.stop()
        failure = self.failure()
        if failure:
            raise failure

    def stderr_text(self, limit: int = 400) -> str:
        text = " / ".join(ln.strip() for ln in self.err.decode("utf-8", "replace").splitlines() if ln.strip())
        return text[:limit] + ("..." if len(text) > limit else "")


@functools.cache
def _unbuffered() -> tuple[str, ...]:
    """`stdbuf -o 1M` when coreutils' stdbuf is there: the child's stdout (stdio, 4 KiB writes to a pipe) then writes
    1 MiB at a time. For the 10x benchmark capture: trace-cmd's system time 0.26 -> 0.08 s, and the reader wakes ~250
    times instead of ~38,000."""
    return ("stdbuf", "-o", "1M") if shutil.which("stdbuf") else ()


@functools.cache
def version(command: str, *args: str) -> str:
    """A tool's version: the word after 'version' in what `command args` prints ('trace-cmd version 3.1.6 ...',
    'perf version 6.1.192')."""
    try:
        out = subprocess.run([command, *args], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    words = (out.stdout + out.stderr).decode("utf-8", "replace").split()
    at = words.index("version") if "version" in words else -1
    return words[at + 1] if 0 <= at < len(words) - 1 else "?"
