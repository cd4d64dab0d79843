"""What an interpreter said of its environment, kept so that the next detect need not start it again (a Python
started takes 30 to 100 ms, more through a shim: most of detect's time where python3 is not a virtual environment's).

An answer is kept for the interpreter named (its absolute path) only where that path is the interpreter itself (its
`sys.executable` is the same file: never a shim, which picks its interpreter by the working directory), and it is
used again only while everything it depends on is unchanged: the interpreter's file (its inode, size and time of
change), HOME and the user (the user's site-packages), and the time of change of each folder it looked in and of
the pyvenv.cfg it looked for, as the interpreter itself saw them before it read them (environment_script.READ).
Installing or removing a package changes its site-packages folder; anything else is a different key. The cache is
one JSON file in pickvariant's own cache folder (only this user may write there), at most MAX_ENTRIES answers and
MAX_BYTES; what is read from it is checked as the interpreter's own answer is. Any error is a miss.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pickvariant._base import strictjson
from pickvariant._base.errors import PickVariantError

NAME = "environments.json"
MAX_ENTRIES = 32
MAX_BYTES = 1024 * 1024
MAX_WATCHED = 16  # the folders one answer looked in: a venv's two, a system Python's four or five


def lookup(path: str, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The answer kept for the interpreter at `path`, where nothing it depends on has changed; else None."""
    entry = _entries(env).get(path)
    if not isinstance(entry, dict) or entry.get("key") != _key(path, env):
        return None
    data = entry.get("data")
    watch = data.get("watch") if isinstance(data, dict) else None
    if not isinstance(watch, dict) or not watch or len(watch) > MAX_WATCHED:
        return None
    if any(not isinstance(place, str) or _changed(place) != when for place, when in watch.items()):
        return None
    return data


def store(path: str, data: Any, env: Mapping[str, str]) -> None:
    """Keep the interpreter's answer, where it may be used again (see the module's text); nothing on any error."""
    watch = data.get("watch") if isinstance(data, dict) else None
    executable = data.get("executable") if isinstance(data, dict) else None
    if not isinstance(watch, dict) or not watch or len(watch) > MAX_WATCHED or not isinstance(executable, str):
        return
    key = _key(path, env)
    try:
        if key is None or os.path.realpath(executable) != key[0]:
            return  # a shim, or an interpreter that says it is another file: its answer is never kept
        import json

        from pickvariant._base.files import write_atomic

        entries = {name: entry for name, entry in _entries(env).items() if name != path}
        kept = dict(list(entries.items())[-(MAX_ENTRIES - 1) :])
        kept[path] = {"key": key, "data": data}
        text = json.dumps(kept)
        if len(text) <= MAX_BYTES:
            write_atomic(_file(env), text, mode=0o600)
    except (OSError, ValueError, PickVariantError):
        return


def _key(path: str, env: Mapping[str, str]) -> list[Any] | None:
    """The interpreter's own file as it is now, and what places the user's site: None where it cannot be read."""
    try:
        real = os.path.realpath(path)
        found = os.stat(real)
    except (OSError, ValueError):
        return None
    return [real, found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, env.get("HOME", ""), os.geteuid()]


def _changed(place: str) -> str:
    try:
        return str(os.stat(place).st_mtime_ns)
    except (OSError, ValueError):
        return ""


def _file(env: Mapping[str, str]) -> Any:
    from pickvariant._base.files import own_cache

    return own_cache(env) / NAME


def _entries(env: Mapping[str, str]) -> dict[str, Any]:
    try:
        from pickvariant._base.files import read_regular

        path = _file(env)
        if not path.is_file():
            return {}
        found = strictjson.loads(read_regular(path, MAX_BYTES, "environment cache", follow=False).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, PickVariantError):
        return {}
    return found if isinstance(found, dict) else {}
