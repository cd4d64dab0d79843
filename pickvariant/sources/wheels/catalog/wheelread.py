"""What a torch wheel says of itself, read from two of its members and never run.

`torch/version.py` gives the release with its local label and the CUDA runtime it was built with;
`torch/cuda/__init__.py` (since torch 2.13) gives `PYTORCH_RELEASES_CODE_CC`, the compute capabilities PyTorch's
release builds carry code for, per CUDA line and host architecture. Both are read with Python's own grammar (`ast`)
and only literal values are taken (`ast.literal_eval`): a name, a call or an expression there is not evaluated, and
a member that is not such a literal leaves the wheel unread, with why.
"""

from __future__ import annotations

import ast
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass

from pickvariant._base.errors import OperationFailed
from pickvariant._base.urls import public_url
from pickvariant.sources.wheels.catalog.remote import RangeFile
from pickvariant.sources.wheels.catalog.zipdirectory import Trimmed, entries_of

VERSION_MEMBER = "torch/version.py"
CUDA_MEMBER = "torch/cuda/__init__.py"
MAX_WHEEL_BYTES = 512 * 1024  # the end of the archive, the start of its central directory, two members
MAX_MEMBER_BYTES = 2 * 1024 * 1024
TABLE = "PYTORCH_RELEASES_CODE_CC"
_CUDA_LINE = re.compile(r"[1-9][0-9]?\.[0-9]{1,2}")
_ZIP_ERRORS = (
    zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, RuntimeError, NotImplementedError, KeyError,
    OverflowError, struct.error, zlib.error, MemoryError,
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class WheelRead:
    """A torch wheel's own word: its version, its CUDA runtime (None for a CPU build), and the release table."""

    url: str  # without credentials
    size: int  # the wheel's size in bytes, as the server gave it
    fetched: int  # the bytes read to learn this
    version: str
    cuda: str | None
    table: dict[str, dict[str, tuple[int, ...]]] | None  # CUDA line -> host arch -> capabilities (90 for 9.0)


def read_wheel(url: str) -> WheelRead:
    """The two members of the wheel at `url`, read by Range requests (remote.NoRange where the server refuses)."""
    remote = RangeFile(url, MAX_WHEEL_BYTES)
    try:
        start, entries = entries_of(remote, remote.size, (VERSION_MEMBER, CUDA_MEMBER))
        with zipfile.ZipFile(Trimmed(remote, start, tuple(entries.values()))) as archive:
            version_text = _member(archive, VERSION_MEMBER, url)
            cuda_text = _member(archive, CUDA_MEMBER, url) if CUDA_MEMBER in archive.namelist() else None
    except _ZIP_ERRORS as error:
        # zipfile's refusals: an encrypted member (RuntimeError), strong encryption or an unknown compression method
        # (NotImplementedError), a damaged deflate stream (zlib.error), a damaged header (struct.error, KeyError).
        said = repr(f"{type(error).__name__}: {error}")[1:-1][:200]
        raise OperationFailed(f"{public_url(url)}: not a readable wheel ({said})") from None
    values = _literals(version_text, ("__version__", "cuda"), url, VERSION_MEMBER)
    version, cuda = values.get("__version__"), values.get("cuda")
    if not isinstance(version, str) or not (cuda is None or isinstance(cuda, str)):
        raise OperationFailed(f"{public_url(url)}: {VERSION_MEMBER} gives no literal __version__ and cuda")
    table = _table(_literals(cuda_text, (TABLE,), url, CUDA_MEMBER).get(TABLE), url) if cuda_text else None
    return WheelRead(
        url=public_url(url), size=remote.size, fetched=remote.fetched, version=version, cuda=cuda, table=table
    )


def _member(archive: zipfile.ZipFile, name: str, url: str) -> str:
    info = archive.getinfo(name) if name in archive.namelist() else None
    if info is None:
        raise OperationFailed(f"{public_url(url)}: no {name} in it")
    if info.file_size > MAX_MEMBER_BYTES:
        raise OperationFailed(f"{public_url(url)}: its {name} is over {MAX_MEMBER_BYTES} bytes; not read")
    with archive.open(info) as member:
        data = member.read(MAX_MEMBER_BYTES + 1)
    return data[:MAX_MEMBER_BYTES].decode("utf-8", errors="replace")


def _literals(text: str, names: tuple[str, ...], url: str, member: str) -> dict[str, object]:
    """The literal value assigned at the top level of `text` to each of `names` (the last assignment wins, as it
    would when run); a name given something that is not a literal is left out."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise OperationFailed(f"{public_url(url)}: its {member} is not Python") from None
    found: dict[str, object] = {}
    for node in tree.body:
        target, value = _assignment(node)
        if target in names and value is not None:
            try:
                found[target] = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                found[target] = NOT_LITERAL  # computed, not written out: nothing of it is evaluated
    return found


class _NotLiteral:
    """What a name is given where it is not a literal (a call, a name, an expression): never evaluated."""


NOT_LITERAL = _NotLiteral()


def _assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None


def _table(value: object, url: str) -> dict[str, dict[str, tuple[int, ...]]] | None:
    """The release table as {"13.2": {"x86_64": (75, 80, ...)}}, or None where it is absent or not of that shape."""
    if value is None:
        return None
    if value is NOT_LITERAL:
        raise OperationFailed(
            f"{public_url(url)}: its {TABLE} is not written as a literal: not read (nothing in it runs)"
        )
    if not isinstance(value, dict) or not all(
        isinstance(key, str) and isinstance(row, dict) for key, row in value.items()
    ):
        raise OperationFailed(f"{public_url(url)}: its {TABLE} is not a table of CUDA lines")
    table: dict[str, dict[str, tuple[int, ...]]] = {}
    for line, hosts in value.items():
        if not _CUDA_LINE.fullmatch(line):  # it names a page to read (ROOT/cu134/): only a CUDA version may
            raise OperationFailed(f"{public_url(url)}: its {TABLE} names {line!r:.40}, which is no CUDA version")
        for host, codes in hosts.items():
            if not isinstance(host, str) or not isinstance(codes, (set, frozenset, list, tuple)):
                raise OperationFailed(f"{public_url(url)}: its {TABLE}[{line!r}] is not a set per host")
            if not all(isinstance(code, int) and not isinstance(code, bool) and 10 <= code < 1000 for code in codes):
                raise OperationFailed(f"{public_url(url)}: its {TABLE}[{line!r}][{host!r}] holds a non-capability")
            table.setdefault(line, {})[host] = tuple(sorted(codes))
    return table
