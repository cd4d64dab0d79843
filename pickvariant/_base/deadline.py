"""One wall-clock deadline for a whole operation (a sync, a fetch): every step gets what is left of it, so that a
server answering slowly, or many steps each within their own limit, never makes the operation outlast it."""

from __future__ import annotations

import time

from pickvariant._base import settings
from pickvariant._base.errors import OperationFailed


class Deadline:
    """`seconds` from now, for the operation `what` names in the error ("catalog sync", "fetching from URL")."""

    def __init__(self, seconds: float, what: str, allow_more: str = f"set {settings.NETWORK_TIMEOUT}") -> None:
        self.seconds = seconds
        self.what = what
        self.allow_more = allow_more  # how to allow more: the variable or option that set it
        self.end = time.monotonic() + seconds

    def left(self, at_most: float | None = None) -> float:
        """The seconds left (at most `at_most`); OperationFailed, naming the operation, once none are."""
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise self.expired()
        return remaining if at_most is None else min(remaining, at_most)

    def expired(self) -> OperationFailed:
        return OperationFailed(
            f"{self.what} took longer than {self.seconds:g} s in all ({self.allow_more} to allow more)"
        )
