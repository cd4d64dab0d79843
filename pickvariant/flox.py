"""The one seam through which pickvariant runs other programs (flox, git): argument lists,
never shell strings; output streamed to a log file; Ctrl-C and timeouts stop the child cleanly."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pickvariant.errors import Interrupted, OperationFailed, Terminated

FLOX_INSTALL_HELP = "flox is not on PATH: install Flox (https://flox.dev/docs/install-flox/) and run this again"
LOG_TAIL_LINES = 15


class _SigTerm(BaseException):
    """Raised in the main thread by the SIGTERM handler, so that the child is stopped, not orphaned."""


def _raise_sigterm(signum: int, frame: object) -> None:
    raise _SigTerm()


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    cwd: Path
    description: str

    def shown(self) -> str:
        import shlex

        return f"(cd {shlex.quote(str(self.cwd))} && {shlex.join(self.argv)})"


def require_program(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise OperationFailed(FLOX_INSTALL_HELP if name == "flox" else f"{name} is not on PATH")
    return path


def tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run(command: Command, log: Path, on_line: Callable[[str], None] = lambda line: None, timeout_s: float | None = None) -> None:
    """Run one command, appending its output to `log`; raise OperationFailed, Interrupted or Terminated on failure."""
    program = require_program(command.argv[0])
    try:
        handle = open(log, "a", encoding="utf-8")
    except OSError as error:
        raise OperationFailed(f"cannot write the log {log}: {error.strerror or error}") from error
    with handle:
        handle.write(f"$ {command.shown()}\n")
        handle.flush()
        try:
            process = subprocess.Popen(
                [program, *command.argv[1:]], cwd=command.cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, text=True, errors="replace", start_new_session=True,
            )
        except OSError as error:
            raise OperationFailed(f"cannot run {command.argv[0]}: {error.strerror or error}") from error
        reader = threading.Thread(target=_pump, args=(process, handle, on_line), daemon=True)
        reader.start()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        # The child runs in its own session (Ctrl-C reaches it only through us), so a SIGTERM
        # that killed only pickvariant would leave flox building on, unseen.
        in_main_thread = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _raise_sigterm) if in_main_thread else None
        try:
            while process.poll() is None:
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError
                time.sleep(0.05)
        except (TimeoutError, KeyboardInterrupt, _SigTerm) as stopped_by:
            _stop(process)
            reader.join(5)
            name = command.argv[0]
            if isinstance(stopped_by, KeyboardInterrupt):
                raise Interrupted(f"interrupted: {name} was stopped; log: {log}") from None
            if isinstance(stopped_by, _SigTerm):
                raise Terminated(f"terminated (SIGTERM): {name} was stopped; log: {log}") from None
            raise OperationFailed(f"`{' '.join(command.argv)}` timed out after {timeout_s:g} s and was stopped; log: {log}\n{tail(log)}") from None
        finally:
            if in_main_thread:
                signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        reader.join(5)
    if process.returncode != 0:
        raise OperationFailed(f"`{' '.join(command.argv)}` failed with exit code {process.returncode}; log: {log}\n{tail(log)}")


def _pump(process: subprocess.Popen[str], handle, on_line: Callable[[str], None]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        handle.write(line)
        handle.flush()
        on_line(line.rstrip("\n"))


def _stop(process: subprocess.Popen[str]) -> None:
    """SIGINT first (flox cleans up), then SIGTERM, then SIGKILL, to the child's whole process group."""
    for sig, grace in ((signal.SIGINT, 10.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run_all(commands: Sequence[Command], log: Path, on_line: Callable[[str], None] = lambda line: None, timeout_s: float | None = None) -> None:
    for command in commands:
        on_line(f"» {command.description}")
        run(command, log, on_line, timeout_s)
