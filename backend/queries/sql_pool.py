"""The SQL console's worker processes (sql_worker.py), seen from the server: at most `size` of them, each running
one query at a time. Started on first use, replaced when one was stopped, all stopped by `close()` (the app's
shutdown, api/sql.py's lifespan; the CLI's end).

Each query waits up to `wait_s` for a free worker (else Busy: 503); the worker has its time limit + GRACE_S to
answer, then it is killed (SIGKILL) and replaced, and the query answered 503. A worker that dies (its address space
or CPU time ran out) is replaced the same way. Answers are read as one message of at most the byte cap + 1 MiB.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path

GRACE_S = 0.5  # past its time limit, a worker has this long to answer before it is killed
START_S = 60.0  # a new worker has this long to say it is ready
_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding the `backend` package
_ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "HOME")  # no token, nothing else of the server's


class Busy(Exception):
    """No worker free in time."""


class WorkerFailed(Exception):
    """The worker did not answer in time or ended (it is replaced): the reason, for the user."""


class _Process:
    """One worker process and its two pipes."""

    def __init__(self, settings: dict):
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        env = {k: os.environ[k] for k in _ENV_KEPT if k in os.environ}
        env["PYTHONPATH"] = _ROOT
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "backend.queries.sql_worker", str(requests_r), str(answers_w),
                 json.dumps(settings)],
                pass_fds=(requests_r, answers_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
                cwd=_ROOT, start_new_session=True,
            )  # fmt: skip
        finally:
            os.close(requests_r)
            os.close(answers_w)
        self.requests = Connection(requests_w, readable=False)
        self.answers = Connection(answers_r, writable=False)
        self.ready = False

    def ask(self, request: dict, seconds: float, max_bytes: int) -> tuple[dict, bytes]:
        """The worker's answer to `request` within `seconds` (after it is ready), or WorkerFailed."""
        if not self.ready:
            header, _ = self._receive(START_S, 4096, "start")
            self.ready = header.get("status") == "ready"
        try:
            self.requests.send_bytes(json.dumps(request).encode())
        except OSError as e:
            raise WorkerFailed(self._ended("query")) from e
        return self._receive(seconds, max_bytes + (1 << 20), "query")

    def _receive(self, seconds: float, max_bytes: int, what: str) -> tuple[dict, bytes]:
        try:
            if not self.answers.poll(seconds):
                self.kill()
                raise WorkerFailed(f"timeout after {seconds:g} s")
            message = self.answers.recv_bytes(max_bytes)
        except (EOFError, OSError) as e:
            raise WorkerFailed(self._ended(what)) from e
        head, _, body = message.partition(b"\n")
        return json.loads(head), body

    def _ended(self, what: str) -> str:
        self.kill()
        code = self.proc.returncode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            if -code == signal.SIGXCPU:
                return f"CPU time ran out during the {what} ({name})"
            return f"the worker ended during the {what} ({name}: most often its memory ran out)"
        return f"the worker ended during the {what} (status {code})"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        """Asks it to end (EOF on its requests), then kills it if it has not within a second."""
        for end in (self.requests, self.answers):
            end.close()
        try:
            self.proc.wait(1)
        except subprocess.TimeoutExpired:
            self.kill()


class WorkerPool:
    def __init__(self, size: int, settings: dict, wait_s: float):
        self.size, self.settings, self.wait_s = size, settings, wait_s
        self._slots = threading.BoundedSemaphore(size)
        self._idle: queue.SimpleQueue[_Process] = queue.SimpleQueue()  # started, not running a query
        self._lock = threading.Lock()
        self._all: set[_Process] = set()
        self._closed = False

    def _start(self) -> _Process:
        with self._lock:
            if self._closed:
                raise Busy("the SQL console is stopping")
            worker = _Process(self.settings)
            self._all.add(worker)
            return worker

    def _drop(self, worker: _Process) -> None:
        worker.kill()
        with self._lock:
            self._all.discard(worker)

    def ask(self, request: dict, seconds: float, max_bytes: int) -> tuple[dict, bytes]:
        """A free worker's answer to `request`: Busy when none is free within wait_s, WorkerFailed when it did not
        answer within `seconds` or ended (it is replaced by a new one, started at once)."""
        if not self._slots.acquire(timeout=self.wait_s):
            raise Busy(f"the SQL console is busy ({self.size} queries running): try again in a moment")
        try:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                worker = self._start()
            try:
                answer = worker.ask(request, seconds, max_bytes)
            except WorkerFailed:
                self._drop(worker)
                self._idle.put(self._start())  # its replacement, importing while the answer goes out
                raise
            self._idle.put(worker)
            return answer
        finally:
            self._slots.release()

    def sweep(self) -> None:
        """Has each idle worker close the copies whose file is gone (busy ones do after their query)."""
        for _ in range(self.size):
            if not self._slots.acquire(blocking=False):
                return
            try:
                try:
                    worker = self._idle.get_nowait()
                except queue.Empty:
                    return
                if worker.ready and worker.alive():
                    try:
                        worker.ask({"op": "sweep"}, START_S, 4096)
                    except WorkerFailed:
                        self._drop(worker)
                        continue
                self._idle.put(worker)
            finally:
                self._slots.release()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
        for worker in workers:
            worker.close()

    def pids(self) -> list[int]:
        with self._lock:
            return [w.proc.pid for w in self._all]
