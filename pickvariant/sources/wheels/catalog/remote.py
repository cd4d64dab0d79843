"""Bounded HTTP reads of a package index: a page, and a remote wheel as a seekable file read by Range requests.

A wheel is a zip; Python's own `zipfile` reads it through `RangeFile`, which fetches only the bytes zipfile asks
for (the end of the archive, the start of its central directory, the members named: wheels/zipdirectory), never the
500 MB wheel. Every read is bounded in time (a timeout per request, each read of its body checked against the
deadline of the page or wheel, and, within `bounded()`, against one deadline and a count of requests for the whole
operation) and in bytes (a budget per page and per wheel, never exceeded even by a read ahead); a server that ignores `Range` (a 200 with the whole file) is refused with why, never
read whole. Redirects are followed only to http(s), never from https to http. Every error of the HTTP layer is one
line naming the URL. What a server sends is data: nothing of it is run, and a URL with credentials is shown without
them (_base/urls.public_url).
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import http.client
import io
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

from pickvariant._base.deadline import Deadline
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


class Spent(OperationFailed):
    """The whole operation's deadline or request bound is spent (`bounded`): nothing more is read."""


# What an HTTP exchange can raise on what a server sends: each becomes one line naming the URL.
_EXCHANGE_ERRORS = (urllib.error.URLError, http.client.HTTPException, OSError, ValueError)


class _Limits:
    """One deadline and a count of requests for a whole operation (a refresh), shared by every read in it."""

    def __init__(self, deadline: Deadline, max_requests: int) -> None:
        self.deadline, self.left = deadline, max_requests
        self.max_requests = max_requests

    def request(self, url: str) -> float:
        """Count one request; the timeout it may wait (what is left of the deadline, at most TIMEOUT_S)."""
        if self.left <= 0:
            raise Spent(f"{self.deadline.what}: more than {self.max_requests} requests; {public_url(url)} was not read")
        self.left -= 1
        return self.time_left(TIMEOUT_S)

    def time_left(self, at_most: float | None = None) -> float:
        try:
            return self.deadline.left(at_most)
        except OperationFailed as error:
            raise Spent(str(error)) from None


_LIMITS: contextvars.ContextVar[_Limits | None] = contextvars.ContextVar("limits", default=None)


@contextlib.contextmanager
def bounded(seconds: float, max_requests: int, what: str, allow_more: str) -> Iterator[None]:
    """Every read inside shares one wall-clock deadline of `seconds` and at most `max_requests` requests."""
    token = _LIMITS.set(_Limits(Deadline(seconds, what, allow_more), max_requests))
    try:
        yield
    finally:
        _LIMITS.reset(token)


def _timeout(url: str) -> float:
    limits = _LIMITS.get()
    return TIMEOUT_S if limits is None else limits.request(url)


def _past(deadline: float) -> bool:
    limits = _LIMITS.get()
    if limits is not None:
        limits.time_left()  # raises Spent once the whole operation's time is spent
    return time.monotonic() > deadline


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed only to http(s), and never from https to plain http (urllib's own follows ftp://)."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        old, new = urllib.parse.urlsplit(req.full_url).scheme, urllib.parse.urlsplit(newurl).scheme
        if new not in ("http", "https") or (old == "https" and new != "https"):
            raise urllib.error.URLError(f"a redirect to {public_url(newurl)!r:.200} is not followed ({old} to {new})")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_Redirects)


def _open(request: urllib.request.Request, url: str) -> Any:
    return _OPENER.open(request, timeout=_timeout(url))


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
        with _open(_request(url, {"Accept": accept}), url) as response:
            body = _read_until(response, max_bytes + 1, deadline, url)
            kind = response.headers.get_content_type()
            stated = response.headers.get("Content-Length")
    except _EXCHANGE_ERRORS as error:
        raise OperationFailed(f"cannot read {public_url(url)}: {_said(error)}") from None
    if len(body) > max_bytes:
        raise OperationFailed(f"{public_url(url)}: more than {max_bytes} bytes; not read")
    if stated is not None and stated.strip().isdigit() and int(stated) != len(body):
        raise OperationFailed(f"{public_url(url)}: {len(body)} bytes of the {int(stated)} it announced; not whole")
    return body, kind


def _said(error: BaseException) -> str:
    """An HTTP or socket error in a few words, on one line (a server's text is shown escaped, cut short)."""
    reason = getattr(error, "reason", None) or error
    text = f"{type(error).__name__}: {reason}" if isinstance(error, http.client.HTTPException) else str(reason)
    return repr(text)[1:-1][:200]


def _read_until(response: Any, size: int, deadline: float, url: str) -> bytes:
    """At most `size` bytes of the response, in chunks, refused once `deadline` passes (a slow drip is no answer)."""
    parts: list[bytes] = []
    left = size
    while left > 0:
        if _past(deadline):
            raise OperationFailed(f"{public_url(url)}: not read within {DEADLINE_S:g} s")
        # read1: what one receive brings (a server dripping bytes returns each at once, and the deadline is checked
        # between them); read() would wait for CHUNK bytes, however slowly they come.
        part = response.read1(min(CHUNK, left))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


class Seekable(io.RawIOBase):
    """A read-only file of `size` bytes that zipfile reads by seek and read: a subclass gives the bytes at a position
    (`_bytes`), this the rest of the file interface."""

    size = 0
    position = 0

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
        data = self._bytes(self.position, wanted)
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)

    def _bytes(self, position: int, wanted: int) -> bytes:
        raise NotImplementedError


class RangeFile(Seekable):
    """A remote file read by HTTP Range requests, within a budget of `max_bytes` fetched in all."""

    def __init__(self, url: str, max_bytes: int) -> None:
        super().__init__()
        self.url, self.budget, self.fetched = url, max_bytes, 0
        self.deadline = time.monotonic() + DEADLINE_S
        self.blocks: list[tuple[int, bytes]] = []
        start, data, self.size = self._fetch(f"bytes=-{TAIL}")
        self.blocks.append((start, data))

    def _past_budget(self) -> OperationFailed:
        return OperationFailed(
            f"{public_url(self.url)}: past the {self.budget // 1024} KiB budget of one wheel (read no further)"
        )

    def _fetch(self, wanted: str) -> tuple[int, bytes, int]:
        try:
            with _open(_request(self.url, {"Range": wanted}), self.url) as response:
                if response.status != 206:
                    raise NoRange(
                        f"{public_url(self.url)}: the server does not answer Range requests (HTTP {response.status})"
                    )
                found = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
                if found is None:
                    raise NoRange(f"{public_url(self.url)}: a partial answer without a Content-Range")
                first, last, size = (int(group) for group in found.groups())
                if last < first or last >= size:
                    raise OperationFailed(f"{public_url(self.url)}: a Content-Range of bytes past the file's own size")
                if last - first + 1 > self.budget - self.fetched:
                    raise self._past_budget()
                data = _read_until(response, last - first + 2, self.deadline, self.url)
        except _EXCHANGE_ERRORS as error:
            raise OperationFailed(f"cannot read {public_url(self.url)}: {_said(error)}") from None
        if len(data) != last - first + 1:
            raise OperationFailed(f"{public_url(self.url)}: {len(data)} bytes for a range of {last - first + 1}")
        self.fetched += len(data)
        return first, data, size

    def _bytes(self, position: int, wanted: int) -> bytes:
        """From a block already fetched, else a new one from `position`, reading ahead within the budget (a range
        the budget cannot hold is not asked for: nothing past it is sent)."""
        for start, block in self.blocks:
            if start <= position and position + wanted <= start + len(block):
                return block[position - start : position - start + wanted]
        left = self.budget - self.fetched
        if wanted > left:
            raise self._past_budget()
        last = min(self.size, position + max(wanted, min(READ_AHEAD, left))) - 1
        start, block, _ = self._fetch(f"bytes={position}-{last}")
        self.blocks.append((start, block))
        return block[position - start : position - start + wanted]
