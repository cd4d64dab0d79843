"""A wheel's central directory read only as far as the members asked for: what zipfile then reads of those members
is byte for byte what it reads of the whole archive, ZIP64 archives included, and a damaged directory is refused."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from pickvariant.sources.wheels.catalog.zipdirectory import Trimmed, entries_of

MEMBERS = ("torch/version.py", "torch/cuda/__init__.py")


class Counting(io.FileIO):
    """A local file that counts the bytes read of it, as a Range reader's budget would."""

    read_bytes = 0

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def, override]
        count = super().readinto(buffer) or 0
        self.read_bytes += count
        return count


def _archive(path: Path, before: int, after: int) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for number in range(before):
            archive.writestr(f"functorch/m{number:05}.py", b"")
        archive.writestr(MEMBERS[0], "__version__ = '2.16.0+cu134'\ncuda = '13.4'\n")
        archive.writestr(MEMBERS[1], "PYTORCH_RELEASES_CODE_CC = {'13.4': {'x86_64': {90}}}\n" * 50)
        for number in range(after):
            archive.writestr(f"torch/include/ATen/ops/op{number:05}.h", b"")
    return path


def _read_trimmed(path: Path) -> tuple[dict[str, bytes], int]:
    with Counting(path) as stream:
        start, entries = entries_of(stream, path.stat().st_size, MEMBERS)
        with zipfile.ZipFile(Trimmed(stream, start, tuple(entries.values()))) as archive:
            found = {name: archive.read(name) for name in archive.namelist()}
        return found, stream.read_bytes


@pytest.mark.parametrize("after", [1_000, 70_000], ids=["zip", "zip64 (over 65,535 entries)"])
def test_the_members_read_are_the_archives_own_and_the_directory_after_them_is_not_read(tmp_path, after) -> None:
    path = _archive(tmp_path / "torch.whl", 80, after)
    found, read = _read_trimmed(path)
    with zipfile.ZipFile(path) as whole:
        assert found == {name: whole.read(name) for name in MEMBERS}
        directory = path.stat().st_size - whole.start_dir
    assert read < 64 * 1024 + (directory // 10)  # the end record and the directory's start, not all of it


def test_a_directory_cut_short_is_refused_not_read_past(tmp_path) -> None:
    path = _archive(tmp_path / "torch.whl", 80, 1_000)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as whole:
        start = whole.start_dir
    second = data.index(b"PK\x01\x02", start + 4)
    data[second : second + 4] = b"XXXX"  # the second entry's signature damaged
    path.write_bytes(bytes(data))
    with pytest.raises(zipfile.BadZipFile, match="without its signature"), Counting(path) as stream:
        entries_of(stream, len(data), MEMBERS)
