"""Bounded HTTP reads of a package index: a page, and a remote wheel as a seekable file read by Range requests.

A wheel is a zip; Python's own `zipfile` reads it through `RangeFile`, which fetches only the bytes zipfile asks
for (the end of the archive, its central directory, the members named), never the 500 MB wheel. Every read is
bounded in time (a timeout per request) and in bytes (a budget per page and per wheel); a server that ignores
`Range` (a 200 with the whole file) is refused with why, never read whole. What a server sends is data: nothing of
it is run, and a URL with credentials is shown without them (_base/urls.public_url).
"""

from __future__ import annotations

import base64
import io
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from pickvariant._base.errors import OperationFailed
from pickvariant._base.urls import public_url

TIMEOUT_S = 30.0  # each request's connect and each read's wait
DEADLINE_S = 120.0  # one page, or one wheel's reads, in all: a server that drips bytes is stopped, not waited for
CHUNK = 256 * 1024
READ_AHEAD = 64 * 1024  # zipfile reads a member's header in small pieces: one request fetches the block around them
TAIL = 64 * 1024 + 22  # the end-of-archive record and the longest zip comment after it
_CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")


class NoRange(OperationFailed):
    """The server sent something other than the part asked for: the wheel cannot be read without downloading it."""


def _request(url: str, headers: dict[str, str]) -> urllib.request.Request:
    """The request for `url`, its credentials (user:password@) moved into a Basic header, as pip sends them."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise OperationFailed(f"{public_url(url)}: only http(s) indexes are read")
    if parts.username is None and parts.password is None:
        return urllib.request.Request(url, headers=headers)
    secret = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
    netloc = parts.hostname or ""
    netloc = f"[{netloc}]" if ":" in netloc else netloc
    netloc += f":{parts.port}" if parts.port else ""
    bare = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    request = urllib.request.Request(bare, headers=headers)
    # Unredirected: a redirect to another host never carries the credentials along.
    request.add_unredirected_header("Authorization", "Basic " + base64.b64encode(secret.encode()).decode())
    return request


def get(url: str, max_bytes: int, accept: str = "*/*") -> tuple[bytes, str]:
    """The body (at most `max_bytes`) and content type of `url`; OperationFailed naming the URL otherwise."""
    deadline = time.monotonic() + DEADLINE_S
    try:
        with urllib.request.urlopen(_request(url, {"Accept": accept}), timeout=TIMEOUT_S) as response:
            body = _read_until(response, max_bytes + 1, deadline, url)
            kind = response.headers.get_content_type()
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise OperationFailed(f"cannot read {public_url(url)}: {getattr(error, 'reason', error)}") from None
    if len(body) > max_bytes:
        raise OperationFailed(f"{public_url(url)}: more than {max_bytes} bytes; not read")
    return body, kind


def _read_until(response: Any, size: int, deadline: float, url: str) -> bytes:
    """At most `size` bytes of the response, in chunks, refused once `deadline` passes (a slow drip is no answer)."""
    parts: list[bytes] = []
    left = size
    while left > 0:
        if time.monotonic() > deadline:
            raise OperationFailed(f"{public_url(url)}: not read within {DEADLINE_S:g} s")
        part = response.read(min(CHUNK, left))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


class RangeFile(io.RawIOBase):
    """A remote file read by HTTP Range requests, within a budget of `max_bytes` fetched in all."""

    def __init__(self, url: str, max_bytes: int) -> None:
        super().__init__()
        self.url, self.budget, self.fetched = url, max_bytes, 0
        self.deadline = time.monotonic() + DEADLINE_S
        self.position = 0
        self.blocks: list[tuple[int, bytes]] = []
        start, data, self.size = self._fetch(f"bytes=-{TAIL}")
        self.blocks.append((start, data))

    def _fetch(self, wanted: str) -> tuple[int, bytes, int]:
        try:
            with urllib.request.urlopen(_request(self.url, {"Range": wanted}), timeout=TIMEOUT_S) as response:
                if response.status != 206:
                    raise NoRange(
                        f"{public_url(self.url)}: the server does not answer Range requests (HTTP {response.status})"
                    )
                found = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
                if found is None:
                    raise NoRange(f"{public_url(self.url)}: a partial answer without a Content-Range")
                first, last, size = (int(group) for group in found.groups())
                if last < first or last - first + 1 > self.budget - self.fetched:
                    raise OperationFailed(f"{public_url(self.url)}: past the {self.budget}-byte budget of one wheel")
                data = _read_until(response, last - first + 2, self.deadline, self.url)
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise OperationFailed(f"cannot read {public_url(self.url)}: {getattr(error, 'reason', error)}") from None
        if len(data) != last - first + 1:
            raise OperationFailed(f"{public_url(self.url)}: {len(data)} bytes for a range of {last - first + 1}")
        self.fetched += len(data)
        return first, data, size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        wanted = min(len(buffer), self.size - self.position)
        if wanted <= 0:
            return 0
        data = self._cached(self.position, wanted)
        if data is None:
            last = min(self.size, self.position + max(wanted, READ_AHEAD)) - 1
            start, block, _ = self._fetch(f"bytes={self.position}-{last}")
            self.blocks.append((start, block))
            data = block[self.position - start : self.position - start + wanted]
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)

    def _cached(self, position: int, size: int) -> bytes | None:
        for start, block in self.blocks:
            if start <= position and position + size <= start + len(block):
                return block[position - start : position - start + size]
        return None
