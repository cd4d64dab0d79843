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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from pickvariant._base.errors import Interrupted, OperationFailed, Terminated
from pickvariant._base.records import record

FLOX_INSTALL_HELP = "flox is not on PATH: install Flox (https://flox.dev/docs/install-flox/) and run this again"
LOG_TAIL_LINES = 15
# How long the output of a finished child is drained before pipes something else holds are given up.
LEFTOVER_GRACE_S = 2.0
_STDERR_TAIL_BYTES = 64 * 1024


class _SigTerm(BaseException):
    """Raised in the main thread by the SIGTERM handler, so that the child is stopped, not orphaned."""


def _raise_sigterm(signum: int, frame: object) -> None:
    raise _SigTerm()


@contextlib.contextmanager
def terminable() -> Iterator[None]:
    """A block in which SIGTERM raises (see `stopped`) rather than ending the process where it stands, SIGTERM's
    default: what the block changed can be put right in its `except` and `finally` clauses."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_sigterm) if in_main_thread else None
    try:
        yield
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def stopped(error: BaseException, what: str) -> BaseException:
    """Ctrl-C or SIGTERM (raised inside `terminable`) as Interrupted or Terminated (exit 130, 143) saying `what`;
    any other error as it is."""
    if isinstance(error, KeyboardInterrupt):
        return Interrupted(f"interrupted: {what}")
    if isinstance(error, _SigTerm):
        return Terminated(f"terminated (SIGTERM): {what}")
    return error


@contextlib.contextmanager
def stoppable(what: str) -> Iterator[None]:
    """A block that Ctrl-C or SIGTERM stops with Interrupted or Terminated naming `what` was stopped."""
    with terminable():
        try:
            yield
        except (KeyboardInterrupt, _SigTerm) as error:
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
            stream.seek(max(0, stream.seek(0, os.SEEK_END) - _STDERR_TAIL_BYTES))
            end = stream.read(_STDERR_TAIL_BYTES)
    except OSError:
        return ""
    return "\n".join(end.decode("utf-8", errors="replace").splitlines()[-lines:])


class _Overflow(Exception):
    """The child printed more than it may: stopped rather than read into memory without bound."""


class _Held:
    """SIGINT and SIGTERM noted rather than acted on, from its making until `resume()`, which puts the handlers back
    and acts on the first one noted, there. A child is started in between: a Ctrl-C that lands while Popen returns
    is acted on where the child is in hand and gets stopped, not before, where it would run on unseen in its own
    session (a pip left removing the old torch while the environment is mended: issue 51). Main thread only."""

    def __init__(self) -> None:
        self.noted: list[int] = []
        self.previous: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):  # one by one: a signal between the two finds SIGINT's put back
                self.previous[sig] = signal.getsignal(sig)
                try:
                    signal.signal(sig, self._note)
                except BaseException:
                    self.resume()
                    raise

    def _note(self, signum: int, frame: object) -> None:
        self.noted.append(signum)

    def resume(self, sigterm: Callable[[int, object], None] | None = None) -> None:
        """The handlers as they were (SIGTERM's `sigterm` where given), then a noted signal acted on."""
        for sig, handler in self.previous.items():
            chosen = sigterm if sig == signal.SIGTERM and sigterm is not None else handler
            signal.signal(sig, signal.SIG_DFL if chosen is None else chosen)  # type: ignore[arg-type]
        if self.noted:
            signal.raise_signal(self.noted[0])  # its handler runs here: a KeyboardInterrupt is raised from this call


def _started(held: _Held, argv: list[str], **options: Any) -> subprocess.Popen:
    """The child, in a session of its own with no stdin, started while `held` notes Ctrl-C and SIGTERM; where
    starting fails, the handlers are put back (and a noted signal acted on) before the error goes on: nothing was
    started that needs stopping."""
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, **options)
    except BaseException:
        held.resume()
        raise


def _wait(
    process: subprocess.Popen,
    deadline: float | None,
    held: _Held,
    overflowed: threading.Event | None = None,
    readers: Sequence[threading.Thread] = (),
) -> None:
    """Start the output readers and wait for `process`; a deadline, Ctrl-C, SIGTERM or an overflow
    stops its whole process group first, also one that landed while it or the readers started (`held`)."""
    # The child runs in its own session (Ctrl-C reaches it only through us), so a SIGTERM
    # that killed only pickvariant would leave it running on, unseen.
    try:
        try:
            # Started while `held` still notes Ctrl-C and SIGTERM: one acted on inside Thread.start() would leave a
            # reader running but not marked started, which no join can wait for (a traceback, not the one line).
            for reader in readers:
                reader.start()
        finally:
            held.resume(sigterm=_raise_sigterm)
        while process.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError
            if overflowed is not None and overflowed.is_set():
                raise _Overflow
            time.sleep(0.05)
    except (TimeoutError, KeyboardInterrupt, _SigTerm, _Overflow):
        _stop(process)
        raise
    finally:
        if signal.SIGTERM in held.previous:
            previous = held.previous[signal.SIGTERM]
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)  # type: ignore[arg-type]


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
        held = _Held()
        try:
            process = _started(
                held,
                [program, *command.argv[1:]],
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
            _wait(process, None if timeout_s is None else time.monotonic() + timeout_s, held, readers=(reader,))
        except KeyboardInterrupt:
            _join(reader)
            raise Interrupted(f"interrupted: {name} was stopped; log: {log}") from None
        except _SigTerm:
            _join(reader)
            raise Terminated(f"terminated (SIGTERM): {name} was stopped; log: {log}") from None
        except TimeoutError:
            _join(reader)
            raise OperationFailed(
                f"`{shlex.join(command.argv)}` timed out after {timeout_s:g} s and was stopped; log: {log}\n{tail(log)}"
            ) from None
        _join(reader)
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
    held = _Held()
    try:
        process = _started(
            held,
            list(argv),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as error:
        return Captured(None, "", "", f"cannot run {argv[0]}: {error.strerror or error}")
    assert process.stdout is not None and process.stderr is not None
    out = bytearray()
    err = bytearray()
    overflowed = threading.Event()

    def keep_head(stream, buffer: bytearray) -> None:
        while chunk := stream.read1(65536):
            if len(buffer) + len(chunk) > max_stdout:
                overflowed.set()
                return
            buffer.extend(chunk)

    def keep_tail(stream, buffer: bytearray) -> None:
        while chunk := stream.read1(65536):
            buffer.extend(chunk)
            del buffer[:-_STDERR_TAIL_BYTES]

    readers = [
        threading.Thread(target=keep_head, args=(process.stdout, out), daemon=True),
        threading.Thread(target=keep_tail, args=(process.stderr, err), daemon=True),
    ]
    problem = None
    try:
        _wait(process, time.monotonic() + timeout_s, held, overflowed, readers)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: {what} was stopped") from None
    except _SigTerm:
        raise Terminated(f"terminated (SIGTERM): {what} was stopped") from None
    except TimeoutError:
        problem = f"{what} did not finish within {timeout_s:g} s and was stopped"
    except _Overflow:
        problem = f"{what} printed more than {max_stdout // (1024 * 1024)} MiB and was stopped: that is not its output"
    # What the child left running in its group (`sleep 30 &`) goes with it; something that left the
    # group (a daemon started with setsid) may still hold the pipes: after a short grace they are
    # left to it, unread and unclosed (closing a pipe a reader is blocked on would block here).
    _stop_leftovers(process)
    if _join(*readers, grace_s=LEFTOVER_GRACE_S):
        process.stdout.close()
        process.stderr.close()
    elif problem is None and not out.strip():
        problem = f"{what} printed nothing and left a process behind that holds its output open"
    return Captured(process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), problem)


def _stop_leftovers(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _join(*readers: threading.Thread, grace_s: float = 5.0) -> bool:
    """Let the readers drain what is left, within `grace_s` in all; True when every one finished.
    One that an interrupt kept from starting has nothing to drain."""
    end = time.monotonic() + grace_s
    for reader in readers:
        if reader.ident is not None:
            reader.join(max(0.0, end - time.monotonic()))
    return not any(reader.is_alive() for reader in readers)


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


def _stop(process: subprocess.Popen) -> None:
    """SIGINT first (flox cleans up), then SIGTERM, then SIGKILL, to the child's whole process group,
    until no process of the group is left: children that outlive their parent are stopped too."""
    group = process.pid
    for sig, grace in ((signal.SIGINT, 10.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            process.poll()
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            process.poll()  # reap the leader, or a zombie would keep the group alive
            if not _group_alive(group):
                return
            time.sleep(0.05)


def _group_alive(group: int) -> bool:
    """Whether any process of the group still runs. A zombie does not: where nobody reaps orphans
    (a container whose PID 1 is no init), kill(0) would see a dead builder as alive for good."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp.
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False
