"""Writing files the way users can trust: atomically, and never over something different without --force."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pickvariant.errors import BadInput, OperationFailed


def check_writable(path: Path, text: str, force: bool) -> bool:
    """True when `path` must be written; False when it already holds exactly `text`."""
    if path.is_symlink():
        raise BadInput(f"{path} is a symbolic link: refusing to write through it")
    if path.exists():
        if not path.is_file():
            raise BadInput(f"{path} exists and is not a regular file")
        try:
            if path.read_text(encoding="utf-8") == text:
                return False
        except (OSError, UnicodeDecodeError):
            pass
        if not force:
            raise BadInput(f"{path} exists with different content: pass --force to overwrite it")
    return True


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write to a temporary file beside `path`, then rename it over: readers never see half a file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise OperationFailed(f"cannot write {path}: {error.strerror or error}") from error
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except OSError as error:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise OperationFailed(f"cannot write {path}: {error.strerror or error}") from error
