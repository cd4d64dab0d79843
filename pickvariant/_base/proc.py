"""Running programs that may run long or print without end (flox, the verify probe): argument lists, never
shell strings; output streamed to a log file or kept bounded in memory; Ctrl-C, SIGTERM and timeouts stop
the child and everything it started. git has its own runner (git.py); short, bounded look-ups
(`nix-instantiate --parse`, `sysctl`) call subprocess.run with a time limit."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import IO

from pickvariant._base.child import (
    STDERR_TAIL_BYTES,
    Held,
    SigTerm,
    join,
    raise_sigterm,
    started,
    stopping_signals,
    wait_for,
)
from pickvariant._base.errors import Interrupted, OperationFailed
from pickvariant._base.records import record

FLOX_INSTALL_HELP = "flox is not on PATH: install Flox (https://flox.dev/docs/install-flox/) and run this again"
LOG_TAIL_LINES = 15


@contextlib.contextmanager
def terminable() -> Iterator[None]:
    """A block in which SIGTERM and SIGHUP raise (see `stopped`) rather than end the process where it stands, their
    default: what the block changed can be put right in its `except` and `finally` clauses. The first of Ctrl-C,
    SIGTERM and SIGHUP raises; those that follow it are ignored from then on, so that a second signal (a Ctrl-C
    pressed twice, a batch system's SIGTERM after its SIGINT) never stops that putting right half-way, nor the line
    that says what became of it: the first one decides how the command ends (130, 143 or 129). Where none came, the
    handlers are put back as they were. SIGHUP ignored (nohup) stays ignored."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {}
    taken: list[int] = []
    if in_main_thread:
        signals = stopping_signals()

        def first_only(signum: int, frame: FrameType | None) -> None:
            if taken or _within(frame, first_only.__code__):
                # One that landed while the first one's handler runs: Python calls this inside that, before the
                # first one has ignored what follows; raising here would decide in its place.
                return
            taken.append(signum)
            for sig in signals:
                signal.signal(sig, signal.SIG_IGN)
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise_sigterm(signum, frame)

        for sig in signals:
            previous[sig] = signal.signal(sig, first_only)
    try:
        yield
    finally:
        for sig, handler in previous.items() if not taken else ():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def _within(frame: FrameType | None, code: CodeType) -> bool:
    """Whether `frame` or a frame that called it runs `code`."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def stopped(error: BaseException, what: str) -> BaseException:
    """Ctrl-C, SIGTERM or SIGHUP (raised inside `terminable`) as Interrupted, Terminated or HungUp (exit 130, 143,
    129) saying `what`; any other error as it is."""
    if isinstance(error, KeyboardInterrupt):
        return Interrupted(f"interrupted: {what}")
    if isinstance(error, SigTerm):
        return error.error(what)
    return error


@contextlib.contextmanager
def stoppable(what: str) -> Iterator[None]:
    """A block that Ctrl-C or SIGTERM stops with Interrupted or Terminated naming `what` was stopped."""
    with terminable():
        try:
            yield
        except (KeyboardInterrupt, SigTerm) as error:
            raise stopped(error, what) from None


@record
class Command:
    argv: tuple[str, ...]
    cwd: Path
    description: str
    # Variables added to the child's environment, never shown nor logged (an index URL with its credentials).
    env: tuple[tuple[str, str], ...] = ()

    def shown(self) -> str:
        return f"(cd {shlex.quote(str(self.cwd))} && {shlex.join(self.argv)})"


def require_program(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise OperationFailed(FLOX_INSTALL_HELP if name == "flox" else f"{name} is not on PATH")
    return path


def tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The log's last lines, read from its last 64 KiB only: a build's log can be gigabytes."""
    try:
        with log.open("rb") as stream:
            stream.seek(max(0, stream.seek(0, os.SEEK_END) - STDERR_TAIL_BYTES))
            end = stream.read(STDERR_TAIL_BYTES)
    except OSError:
        return ""
    return "\n".join(end.decode("utf-8", errors="replace").splitlines()[-lines:])


def run(
    command: Command, log: Path, on_line: Callable[[str], None] = lambda line: None, timeout_s: float | None = None
) -> str | None:
    """Run one command, appending its output to `log`; raise OperationFailed, Interrupted or Terminated on failure.

    Returns why the log is incomplete, where writing it failed (a full disk): the command itself ran to its end."""
    program = require_program(command.argv[0])
    if not command.cwd.is_dir():
        raise OperationFailed(f"cannot run {command.argv[0]} in {command.cwd}: the directory does not exist")
    try:
        handle = open(log, "a", encoding="utf-8")  # noqa: SIM115  # closed by the `with` below, once open() succeeded
    except OSError as error:
        raise OperationFailed(f"cannot write the log {log}: {error.strerror or error}") from error
    broken: list[str] = []
    with contextlib.ExitStack() as closing:
        # A full disk may refuse even the last flush on close: that is the log's problem, said below, not a crash.
        closing.callback(_close_quietly, handle, broken)
        try:
            handle.write(f"$ {command.shown()}\n")
            handle.flush()
        except OSError as error:
            broken.append(error.strerror or str(error))
        held = Held()
        try:
            process = started(
                held,
                [program, *command.argv[1:]],
                dies_with_us=True,
                cwd=command.cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                env={**os.environ, **dict(command.env)} if command.env else None,
            )
        except OSError as error:
            raise OperationFailed(f"cannot run {command.argv[0]}: {error.strerror or error}") from error
        reader = threading.Thread(target=_pump, args=(process, handle, on_line, broken), daemon=True)
        name = command.argv[0]
        try:
            wait_for(process, None if timeout_s is None else time.monotonic() + timeout_s, held, readers=(reader,))
        except (KeyboardInterrupt, SigTerm) as signalled:
            join(reader)
            raise stopped(signalled, f"{name} was stopped; log: {log}") from None
        except TimeoutError:
            join(reader)
            waited = round(timeout_s or 0.0, 1)  # only a time limit raises it
            raise OperationFailed(
                f"`{shlex.join(command.argv)}` timed out after {waited:g} s and was stopped; log: {log}\n{tail(log)}"
            ) from None
        join(reader)
    incomplete = f"the log {log} is incomplete: writing it failed ({broken[0]})" if broken else None
    if process.returncode != 0:
        said = f"{incomplete}; what it holds:" if incomplete else f"log: {log}"
        raise OperationFailed(
            f"`{shlex.join(command.argv)}` failed with exit code {process.returncode}; {said}\n{tail(log)}"
        )
    return incomplete


def _close_quietly(handle: IO[str], broken: list[str]) -> None:
    try:
        handle.close()
    except OSError as error:
        if not broken:
            broken.append(error.strerror or str(error))


def _pump(process: subprocess.Popen[str], handle: IO[str], on_line: Callable[[str], None], broken: list[str]) -> None:
    """Copy the child's output to the log, line by line, for as long as it writes. A log write that fails (a full
    disk, a quota) is recorded once in `broken` and the rest is still read: a child blocked on a full pipe would
    never finish, and pickvariant would wait on it for ever."""
    assert process.stdout is not None
    for line in process.stdout:
        if not broken:
            try:
                handle.write(line)
                handle.flush()
            except OSError as error:
                broken.append(error.strerror or str(error))
        on_line(line.rstrip("\n"))
