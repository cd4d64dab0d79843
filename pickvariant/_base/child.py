"""A child process handled as every child of pickvariant is: started in a session of its own with no stdin, while
Ctrl-C and SIGTERM are noted rather than acted on (Held); waited for within a deadline; on a timeout, an overflow,
Ctrl-C or SIGTERM, stopped with its whole process group. proc.py (programs that log) and capture.py (programs whose
output is kept) run their children through these; this module imports no more than they need (subprocess, signal,
threading), so a short look-up started early costs little to start."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

from pickvariant._base.errors import HungUp, Terminated

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

# How long the output of a finished child is drained before pipes something else holds are given up.
LEFTOVER_GRACE_S = 2.0
STDERR_TAIL_BYTES = 64 * 1024
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_PARENT_GONE = 129  # the exit code of a child whose pickvariant ended before it could run


class SigTerm(BaseException):
    """Raised in the main thread by the SIGTERM handler (SIGHUP's too: a closed SSH session), so that the child is
    stopped, not orphaned."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signum)
        self.signum = signum

    def error(self, what: str) -> Terminated:
        """Terminated (exit 143), or HungUp (129) for SIGHUP, saying `what` was stopped."""
        if self.signum == signal.SIGHUP:
            return HungUp(f"hung up (SIGHUP: the terminal or SSH session closed): {what}")
        return Terminated(f"terminated (SIGTERM): {what}")


def raise_sigterm(signum: int, frame: object) -> None:
    raise SigTerm(signum)


def stopping_signals() -> tuple[int, ...]:
    """The signals that stop pickvariant's work rather than end it where it stands: Ctrl-C, SIGTERM, and SIGHUP where
    it is not ignored (`nohup` ignores it, and what runs under nohup must go on when the session closes)."""
    hangup = () if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN else (signal.SIGHUP,)
    return (signal.SIGINT, signal.SIGTERM, *hangup)


class Overflow(Exception):
    """The child printed more than it may: stopped rather than read into memory without bound."""


class Held:
    """SIGINT and SIGTERM noted rather than acted on, from its making until `resume()`, which puts the handlers back
    and acts on the first one noted, there. A child is started in between: a Ctrl-C that lands while Popen returns
    is acted on where the child is in hand and gets stopped, not before, where it would run on unseen in its own
    session (a pip left removing the old torch while the environment is mended: issue 51). Main thread only."""

    def __init__(self) -> None:
        self.noted: list[int] = []
        self.previous: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in stopping_signals():  # one by one: a signal between two finds the first's put back
                self.previous[sig] = signal.getsignal(sig)
                try:
                    signal.signal(sig, self._note)
                except BaseException:
                    self.resume()
                    raise

    def _note(self, signum: int, frame: object) -> None:
        self.noted.append(signum)

    def resume(self, sigterm: Callable[[int, object], None] | None = None) -> None:
        """The handlers as they were (SIGTERM's and SIGHUP's `sigterm` where given), and the first signal noted acted
        on. Acted on before the handlers are back: a second signal that lands meanwhile (a batch system's SIGTERM
        every few ms after its Ctrl-C) is only noted, so the first one decides how the command ends, never a later
        one that found its handler back first. A handler that ignores what follows it (terminable's) is not undone."""
        restore = {}
        for sig, handler in self.previous.items():
            # A Python handler already there (terminable's: the first signal raises, later ones wait) is kept.
            chosen = sigterm if sig != signal.SIGINT and sigterm is not None and not callable(handler) else handler
            restore[sig] = signal.SIG_DFL if chosen is None else chosen
        first = self.noted[0] if self.noted else None
        act_now = first is not None and callable(restore.get(first))
        try:
            if act_now:
                restore[first](first, None)  # type: ignore[index, operator]  # raises: KeyboardInterrupt, SigTerm
        finally:
            for sig, handler in restore.items():
                if signal.getsignal(sig) == self._note:  # not one the handler just set (SIG_IGN: it went first)
                    signal.signal(sig, handler)  # type: ignore[arg-type]
        if first is not None and not act_now:
            signal.raise_signal(first)  # its default action (or none, where ignored), as it would have had


def started(held: Held, argv: list[str], dies_with_us: bool = False, **options: Any) -> subprocess.Popen:
    """The child, in a session of its own with no stdin, started while `held` notes Ctrl-C and SIGTERM; where
    starting fails, the handlers are put back (and a noted signal acted on) before the error goes on: nothing was
    started that needs stopping. `dies_with_us`: on Linux the kernel kills it (SIGKILL) when pickvariant ends in a
    way no handler sees (SIGKILL, the OOM killer, a batch system's hard limit): an installer never outlives it."""
    preexec = _parent_death_signal() if dies_with_us else None
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=preexec, **options)
    except BaseException:
        held.resume()
        raise


def _parent_death_signal() -> Callable[[], None] | None:
    """What the child runs before exec: prctl(PR_SET_PDEATHSIG, SIGKILL), then exit at once where this process has
    already gone (its parent is then another: the signal would never come). None off Linux, or without libc's
    prctl (the child then runs as any other, in its own session)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(_PARENT_GONE)

    return preexec


def wait_for(
    process: subprocess.Popen,
    deadline: float | None,
    held: Held,
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
            held.resume(sigterm=raise_sigterm)
        # Waited for in slices of at most 50 ms (Popen.wait polls from half a millisecond up): a child that ends at
        # once is seen at once, not at the next tick (the environment's interpreter, ~10 ms, waited 50).
        while process.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError
            if overflowed is not None and overflowed.is_set():
                raise Overflow
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(0.05)
    except (TimeoutError, KeyboardInterrupt, SigTerm, Overflow):
        stop(process)
        raise
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            # Ignored now: a first signal was taken (terminable), and those after it wait until what it stopped is
            # put right; the block that took it puts the handlers back.
            if sig in held.previous and signal.getsignal(sig) != signal.SIG_IGN:
                previous = held.previous[sig]
                signal.signal(sig, signal.SIG_DFL if previous is None else previous)  # type: ignore[arg-type]


def stop_leftovers(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def join(*readers: threading.Thread, grace_s: float = 5.0) -> bool:
    """Let the readers drain what is left, within `grace_s` in all; True when every one finished.
    One that an interrupt kept from starting has nothing to drain."""
    end = time.monotonic() + grace_s
    for reader in readers:
        if reader.ident is not None:
            reader.join(max(0.0, end - time.monotonic()))
    return not any(reader.is_alive() for reader in readers)


def stop(process: subprocess.Popen) -> None:
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
            if not group_alive(group):
                return
            time.sleep(0.05)


def group_alive(group: int) -> bool:
    """Whether any process of the group still runs. A zombie does not: where nobody reaps orphans
    (a container whose PID 1 is no init), kill(0) would see a dead builder as alive for good."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc"):
        return True
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stream:
                fields = stream.read().decode("ascii", "replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp.
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False
