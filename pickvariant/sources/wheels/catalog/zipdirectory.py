"""The members a wheel reader needs, found without reading the whole central directory of a remote wheel.

A torch wheel's central directory is ~1.2 MB (12,000 entries), and the two members pickvariant reads lie in its first
~90 KB (entries 76 and ~1,086 of PyPI's torch 2.9.1 wheels for Linux x86_64 and aarch64 and for Windows). So the end
record is read first, then the directory from its start, only until every member asked for is found. zipfile then
reads an archive made of the real bytes before the directory and a directory of just those entries (their own bytes,
unchanged), so that every check of a member (its local header and name, encryption, compression method, CRC) is
still zipfile's own, and nothing past the members is fetched.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Iterable

from pickvariant.sources.wheels.catalog.remote import Seekable

_END = struct.Struct("<4s4H2LH")  # the end-of-central-directory record (22 bytes, then its comment)
_END64_LOCATOR = struct.Struct("<4sLQL")  # the ZIP64 end record's locator, just before the end record
_END64 = struct.Struct("<4sQ2H2L4Q")  # the ZIP64 end record
_ENTRY = struct.Struct("<4s4B4HL2L5H2L")  # a central directory entry's fixed part (46 bytes)
_MAX_COMMENT = 0xFFFF
_UTF8_FLAG = 0x800


def _exactly(stream: io.RawIOBase, at: int, size: int) -> bytes:
    stream.seek(at)
    data = stream.read(size)
    if len(data) != size:
        raise zipfile.BadZipFile(f"the archive ends inside a record at byte {at}")
    return data


def directory_span(stream: io.RawIOBase, size: int) -> tuple[int, int]:
    """Where the central directory starts and how long it is, from the end record (ZIP64's where it points there)."""
    tail_start = max(0, size - _END.size - _MAX_COMMENT)
    tail = _exactly(stream, tail_start, size - tail_start)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _END.size:
        raise zipfile.BadZipFile("no end-of-archive record")
    end = _END.unpack(tail[at : at + _END.size])
    if at + _END.size + end[7] != len(tail):
        raise zipfile.BadZipFile("an end-of-archive record whose comment does not end the file")
    count, length, start = end[4], end[5], end[6]
    if count == 0xFFFF or length == 0xFFFFFFFF or start == 0xFFFFFFFF:
        locator = _END64_LOCATOR.unpack(_exactly(stream, tail_start + at - _END64_LOCATOR.size, _END64_LOCATOR.size))
        record = _END64.unpack(_exactly(stream, locator[2], _END64.size)) if locator[0] == b"PK\x06\x07" else None
        if record is None or record[0] != b"PK\x06\x06":
            raise zipfile.BadZipFile("a ZIP64 archive without its ZIP64 end record")
        length, start = record[8], record[9]
    if start + length > size:
        raise zipfile.BadZipFile("a central directory past the end of the file")
    return start, length


def entries_of(stream: io.RawIOBase, size: int, names: Iterable[str]) -> tuple[int, dict[str, bytes]]:
    """The directory's start, and the raw entry of each of `names` found, reading no further than the last one."""
    wanted = set(names)
    start, length = directory_span(stream, size)
    found: dict[str, bytes] = {}
    position, end = start, start + length
    while position < end and len(found) < len(wanted):
        fixed = _exactly(stream, position, _ENTRY.size)
        fields = _ENTRY.unpack(fixed)
        if fields[0] != b"PK\x01\x02":
            raise zipfile.BadZipFile(f"a central directory entry without its signature at byte {position}")
        rest = _exactly(stream, position + _ENTRY.size, fields[12] + fields[13] + fields[14])
        name = rest[: fields[12]].decode("utf-8" if fields[5] & _UTF8_FLAG else "cp437", errors="replace")
        if name in wanted and name not in found:
            found[name] = fixed + rest
        position += _ENTRY.size + len(rest)
    return start, found


class Trimmed(Seekable):
    """The archive as zipfile reads it: the remote bytes before the central directory, then a directory of the
    `entries` given and an end record for it."""

    def __init__(self, remote: io.RawIOBase, directory_start: int, entries: tuple[bytes, ...]) -> None:
        super().__init__()
        if directory_start >= 0xFFFFFFFF:
            raise zipfile.BadZipFile("a central directory past 4 GiB")
        directory = b"".join(entries)
        end = _END.pack(b"PK\x05\x06", 0, 0, len(entries), len(entries), len(directory), directory_start, 0)
        self.remote, self.start = remote, directory_start
        self.tail = directory + end
        self.size = directory_start + len(self.tail)

    def _bytes(self, position: int, wanted: int) -> bytes:
        if position >= self.start:
            return self.tail[position - self.start : position - self.start + wanted]
        self.remote.seek(position)
        return self.remote.read(min(wanted, self.start - position)) or b""
