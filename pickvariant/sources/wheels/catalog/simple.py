"""A project's wheels as a package index lists them: PEP 691 JSON where the server gives it, else a PEP 503 page.

File names are read by `packaging.utils.parse_wheel_filename` (the wheel spec's own grammar), never split by hand;
a name it refuses is left out. Links are resolved against the page and kept only on http(s).
"""

from __future__ import annotations

import html.parser
import json
import urllib.parse
from dataclasses import dataclass

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from pickvariant._base.errors import OperationFailed
from pickvariant._base.urls import public_url
from pickvariant.sources.wheels.catalog.remote import get

MAX_PAGE_BYTES = 32 * 1024 * 1024  # PyPI's torch page lists thousands of files
ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"


@dataclass(frozen=True, kw_only=True)
class IndexedWheel:
    filename: str
    url: str
    version: Version
    tags: frozenset[Tag]


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href, self._text = dict(attrs).get("href"), []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text).strip()))
            self._href = None


def wheels_of(index: str, project: str) -> list[IndexedWheel]:
    """Every wheel of `project` the index at `index` lists (its simple page, ROOT/PROJECT/)."""
    page = f"{index.rstrip('/')}/{project}/"
    body, kind = get(page, MAX_PAGE_BYTES, ACCEPT)
    try:
        text = body.decode("utf-8")
        if kind == "application/vnd.pypi.simple.v1+json":
            files = json.loads(text).get("files", [])
            if not isinstance(files, list):
                raise ValueError('"files" is not a list')
            links = [(str(entry["url"]), str(entry["filename"])) for entry in files if isinstance(entry, dict)]
        else:
            anchors = _Anchors()
            anchors.feed(text)
            links = anchors.links
    except (UnicodeDecodeError, ValueError, KeyError, AttributeError, TypeError, RecursionError) as error:
        raise OperationFailed(f"{public_url(page)}: not a simple index page ({error!s:.80})") from None
    return [wheel for href, name in links if (wheel := _wheel(page, href, name, project)) is not None]


def _wheel(page: str, href: str, name: str, project: str) -> IndexedWheel | None:
    url = urllib.parse.urljoin(page, href).split("#", 1)[0]
    filename = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1]) or name
    if urllib.parse.urlsplit(url).scheme not in ("http", "https") or not filename.endswith(".whl"):
        return None
    try:
        found, version, _, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, ValueError):
        return None
    if found != project:
        return None
    return IndexedWheel(filename=filename, url=url, version=version, tags=tags)
