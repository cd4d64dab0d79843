"""After a set is installed: is the torch the environment's Python imports the PyTorch the set is on?

A published companion whose version the catalog cannot know (torchvision and torchaudio recipes state none) is
installed by name, and Flox resolves a name to the newest version the organisation published, which may be a build
on another branch with another torch. So the set's torch is read back from the environment before success is
declared (with --no-verify too), and where it is not the one chosen the environment's manifest and lock are put
back as they were: nothing the user had is changed by an install that did not give what it said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pickvariant._base.capture import capture
from pickvariant._base.errors import OperationFailed
from pickvariant._base.files import read_regular, write_atomic
from pickvariant._base.records import record
from pickvariant._base.text import visible
from pickvariant._base.versions import release_numbers
from pickvariant.sources.build import Companion
from pickvariant.sources.flox.install import existing, floxcontract

# Reads the distribution's metadata only: no torch import, so no CUDA initialisation and no kernels loaded.
_READ_VERSION = (
    "import importlib.metadata as m\n"
    "try:\n    print(m.version('torch'))\n"
    "except m.PackageNotFoundError:\n    print('none')\n"
)
CHECK_TIMEOUT_S = 300.0  # the first activation of a new environment links it (flox builds it on first use)
_MAX_OUTPUT = 4096


@record
class Saved:
    """The environment's manifest and lock as they were before the install (None: the file was not there)."""

    directory: Path
    manifest: bytes | None
    lockfile: bytes | None


def _files(directory: Path) -> tuple[Path, Path]:
    names = floxcontract.contract()["files"]
    return directory / names["manifest"], directory / names["lockfile"]


def save(directory: Path) -> Saved:
    manifest, lockfile = _files(directory)
    return Saved(directory, _read(manifest), _read(lockfile))


def _read(path: Path) -> bytes | None:
    """The file's bytes, bounded and only from a regular file (a FIFO in its place is refused, never waited on)."""
    if not path.exists() and not path.is_symlink():
        return None
    return read_regular(path, existing.MANIFEST_LIMIT, f"the Flox {path.name}")


def restore(saved: Saved) -> None:
    """Write the manifest and lock back as they were (Flox relinks the environment from them on its next use)."""
    for path, content in zip(_files(saved.directory), (saved.manifest, saved.lockfile), strict=True):
        if content is None:
            path.unlink(missing_ok=True)
        else:
            write_atomic(path, content)


def linked_torch(python: list[str]) -> str:
    """The version of the torch distribution the environment's Python finds ('none' where it finds none)."""
    done = capture([*python, "-c", _READ_VERSION], CHECK_TIMEOUT_S, _MAX_OUTPUT, "the environment's torch version")
    if done.problem is not None or done.returncode != 0:
        tail = done.stderr_tail.strip()
        said = done.problem or visible(tail.splitlines()[-1] if tail else f"exit {done.returncode}")
        raise OperationFailed(f"could not read the environment's torch version: {said}")
    return visible(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "none")


def wrong_torch(found: str, expected: str) -> bool:
    found_release = release_numbers(found)
    return found_release is None or found_release != release_numbers(expected)


def check(python: list[str], expected: str, companions: Sequence[Companion], on_line: Callable[[str], None]) -> None:
    """Raise OperationFailed unless the environment's Python finds PyTorch `expected` (the caller puts it back)."""
    on_line(f"» check that the environment's Python finds PyTorch {expected}")
    found = linked_torch(python)
    if not wrong_torch(found, expected):
        return
    unpinned = [c.package for c in companions if not c.version]
    named = f"{', '.join(unpinned)} (installed by name: no version of it is known)" if unpinned else "the set"
    raise OperationFailed(
        f"the environment's Python finds torch {found}, not PyTorch {expected}: Flox resolved {named} to a build on "
        f"another PyTorch; the environment was put back as it was\nwhat to do: have the organisation publish it from "
        f"the branch with PyTorch {expected}, or install with --torch naming the PyTorch it was published on"
    )
