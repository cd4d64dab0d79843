"""Running a short program with its output kept in memory, bounded (the environment's interpreter, the verify probe,
`pip --version`): capture() runs one to its end; Capturing starts one now and collects it later, so that it runs
while the caller does other work. The child is handled as proc.py handles every child: in its own session, its
whole group stopped on a timeout, an overflow, Ctrl-C or SIGTERM."""

from __future__ import annotations

import subprocess
import threading
import time

from pickvariant._base.child import (
    LEFTOVER_GRACE_S,
    STDERR_TAIL_BYTES,
    Held,
    Overflow,
    SigTerm,
    join,
    started,
    stop_leftovers,
    wait_for,
)
from pickvariant._base.errors import Interrupted
from pickvariant._base.records import record
from pickvariant._base.text import size_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import IO


@record
class Captured:
    """What a program printed, bounded: `problem` says why it was stopped, if it was."""

    returncode: int | None
    stdout: str
    stderr_tail: str
    problem: str | None = None


def capture(argv: Sequence[str], timeout_s: float, max_stdout: int, what: str, cwd: str | None = None) -> Captured:
    """Run `argv` to completion with its output in memory, at most `max_stdout` bytes of it.

    A child that prints more, or runs past `timeout_s`, is stopped with its whole process
    group (so nothing it started runs on); so is one that is running when Ctrl-C or SIGTERM
    reaches pickvariant, which then raises Interrupted or Terminated.
    """
    return Capturing(argv, timeout_s, max_stdout, what, cwd).result()


class Capturing:
    """capture's child, started now and read while the caller does other work: `result()` waits for it, as capture
    does (`timeout_s` counts from the start); `stop()` ends it where no result is wanted (an error on the way). Until
    either, Ctrl-C and SIGTERM are noted, not acted on: acted on there, where the child is in hand (Held)."""

    def __init__(self, argv: Sequence[str], timeout_s: float, max_stdout: int, what: str, cwd: str | None = None):
        self.timeout_s, self.max_stdout, self.what = timeout_s, max_stdout, what
        self.deadline = time.monotonic() + timeout_s
        self.out, self.err, self.overflowed = bytearray(), bytearray(), threading.Event()
        self.done: Captured | None = None
        self.held = Held()
        try:
            self.process = started(self.held, list(argv), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as error:
            self.done = Captured(None, "", "", f"cannot run {argv[0]}: {error.strerror or error}")
            return
        self.readers = [
            threading.Thread(target=self._keep_head, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self._keep_tail, args=(self.process.stderr,), daemon=True),
        ]
        for reader in self.readers:  # while `held` notes a Ctrl-C (see wait_for)
            reader.start()

    def _keep_head(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]  # a BufferedReader's
            if len(self.out) + len(chunk) > self.max_stdout:
                self.overflowed.set()
                return
            self.out.extend(chunk)

    def _keep_tail(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            self.err.extend(chunk)
            del self.err[:-STDERR_TAIL_BYTES]

    def result(self) -> Captured:
        if self.done is not None:
            return self.done
        problem = None
        try:
            wait_for(self.process, self.deadline, self.held, self.overflowed)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted: {self.what} was stopped") from None
        except SigTerm as signalled:
            raise signalled.error(f"{self.what} was stopped") from None
        except TimeoutError:
            problem = f"{self.what} did not finish within {self.timeout_s:g} s and was stopped"
        except Overflow:
            problem = (
                f"{self.what} printed more than {size_text(self.max_stdout)} and was stopped: that is not its output"
            )
        finally:
            self.done = self._ended(problem)
        return self.done

    def _ended(self, problem: str | None) -> Captured:
        """What the child left running in its group (`sleep 30 &`) goes with it; something that left the group (a
        daemon started with setsid) may still hold the pipes: after a short grace they are left to it, unread and
        unclosed (closing a pipe a reader is blocked on would block here)."""
        stop_leftovers(self.process)
        assert self.process.stdout is not None and self.process.stderr is not None
        if join(*self.readers, grace_s=LEFTOVER_GRACE_S):
            self.process.stdout.close()
            self.process.stderr.close()
        elif problem is None and not self.out.strip():
            problem = f"{self.what} printed nothing and left a process behind that holds its output open"
        out, err = self.out.decode("utf-8", "replace"), self.err.decode("utf-8", "replace")
        return Captured(self.process.returncode, out, err, problem)

    def stop(self) -> None:
        """End the child now, unread, where result() was not asked for; the signal handlers are put back (a Ctrl-C
        noted meanwhile is acted on here)."""
        if self.done is not None:
            return
        self.done = Captured(None, "", "", f"{self.what} was stopped unread")
        stop_leftovers(self.process)
        self.process.wait()
        self.held.resume()
        if join(*self.readers, grace_s=LEFTOVER_GRACE_S):
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()
