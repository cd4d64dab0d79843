"""The one exception family of pickvariant; each error carries its exit code, and console.exit_for alone ends a command with it."""

from __future__ import annotations


class PickVariantError(Exception):
    """Base class: an operation failed (exit 1). `hint`, where given: what would help, kept apart from what went
    wrong (as pip's errors carry theirs), so a program reads it as a field and the line shows it after a colon."""

    exit_code = 1

    def __init__(self, *args: object, hint: str | None = None) -> None:
        super().__init__(*args)
        self.hint = hint


class BadInput(PickVariantError):
    """The user's input (a flag, a file, an environment variable, the catalog) is unusable (exit 2)."""

    exit_code = 2


class NoVariant(PickVariantError):
    """No variant of the catalog fits this machine (exit 3)."""

    exit_code = 3


class OperationFailed(PickVariantError):
    """Something pickvariant ran or wrote failed (exit 1)."""

    exit_code = 1


class Interrupted(PickVariantError):
    """The user pressed Ctrl-C while a command ran (exit 130)."""

    exit_code = 130


class Terminated(PickVariantError):
    """pickvariant got SIGTERM (a job's time limit, `kill`) while a command ran (exit 143)."""

    exit_code = 143


class HungUp(Terminated):
    """The terminal or SSH session pickvariant ran in closed (SIGHUP) while a command ran (exit 129)."""

    exit_code = 129
