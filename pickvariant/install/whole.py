"""An install into a Python environment is whole or not at all, also when it is interrupted, stopped or fails.

pip removes the old torch before it writes the new one, and its own rollback does not run on Ctrl-C or SIGTERM: an
install stopped half-way leaves an environment with no torch, or with part of one (issue 51). So before pip or uv
runs, every distribution in the environment's site-packages is kept: each file its RECORD names is hard-linked
into a folder beside it (a link costs no space and survives pip's removal of the original; a copy where the
filesystem refuses links). When the installer did not finish, every distribution is judged by its RECORD (each
file there, of its size): a whole one stays, old or new; one that is not (a half-written torch, one pip removed) is
put back from the links, and what the stopped installer left that no whole distribution owns is removed. Then the
folder goes. Signals are held off while this runs: a second Ctrl-C cannot stop the mending half-way.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import shutil
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pickvariant._base import text
from pickvariant._base.errors import OperationFailed

MAX_RECORD_BYTES = 32 * 1024 * 1024  # a CUDA torch's RECORD is about 2 MiB
KEPT_PREFIX = ".pickvariant-kept-"
_NORMAL = re.compile(r"[-_.]+")


@dataclass(frozen=True)
class Distribution:
    """One installed distribution as its .dist-info says: its files (relative to site-packages) and their sizes."""

    name: str  # normalised project name
    version: str
    dist_info: str
    files: tuple[tuple[str, int | None], ...]

    @property
    def tops(self) -> frozenset[str]:
        """The names directly in site-packages that its files live under (`torch`, `torch-2.13.0.dist-info`)."""
        return frozenset(path.split("/", 1)[0] for path, _ in self.files if not path.startswith("../"))


@dataclass(frozen=True)
class Kept:
    """The environment as it was before the install: its distributions, and the folder holding their files."""

    site: Path
    folder: Path
    before: dict[str, Distribution]
    entries: frozenset[str]  # the names in site-packages before the install


def keep(site: Path) -> Kept:
    """Hard-link every installed distribution's files into a folder of its own inside `site`."""
    folder = site / f"{KEPT_PREFIX}{os.getpid()}"
    before = {dist.name: dist for dist in installed(site) if whole(site, dist)}
    try:
        folder.mkdir(mode=0o700)
        for dist in before.values():
            for path, _ in dist.files:
                _link(site / path, folder / path)
        changed = sorted(dist.name for dist in before.values() if not _kept_whole(site, folder, dist))
        if changed:  # a file went while it was being kept: something else is changing the environment now
            raise OSError(f"{', '.join(changed)} changed while being kept (another installer at work there?)")
    except BaseException as error:
        shutil.rmtree(folder, ignore_errors=True)  # also on Ctrl-C: nothing was installed yet, nothing is left
        if not isinstance(error, OSError):
            raise
        raise OperationFailed(
            f"cannot keep the environment's packages in {folder} before installing ({error.strerror or error}): "
            "nothing was installed"
        ) from error
    return Kept(site=site, folder=folder, before=before, entries=frozenset(_entries(site)) - {folder.name})


def recover(site: Path) -> list[str]:
    """What an install that was killed before it settled (SIGKILL, the OOM killer, a power cut) left in `site`, put
    right; called with the environment's lock held, so every kept folder there is such a one. Each distribution it
    kept is judged as settle() judges one after a stopped install: one not whole now is put back from the folder, and
    what stands in its place that no whole distribution owns (a half-written dist-info, pip's `~` stash) removed.
    Returns what was found and done, a line each; the folder goes unless something could not be put back."""
    said: list[str] = []
    for folder in sorted(site.glob(f"{KEPT_PREFIX}*")):
        if not folder.is_dir() or folder.is_symlink():
            continue
        before = {dist.name: dist for dist in installed(folder)}
        # Unsound now and of a kept project (what the killed installer was writing), or pip's stash: not kept as
        # the environment's own entries, so that mending removes them.
        loose = {
            dist.dist_info
            for dist in installed(site)
            if dist.name in before and dist.dist_info != before[dist.name].dist_info and not _written(site, dist)
        }
        entries = frozenset(entry for entry in _entries(site) if entry not in loose and not entry.startswith("~"))
        kept = Kept(site=site, folder=folder, before=before, entries=entries)
        with _signals_held():
            lines = _mend(kept, ())
            if not any("could not be put back" in line for line in lines):
                shutil.rmtree(folder, ignore_errors=True)
        found = f"an earlier install into this environment was killed before it finished ({text.visible(folder.name)})"
        said.append(f"{found}: {'; '.join(lines) if lines else 'every package it kept is there, whole'}")
    return said


def _kept_whole(site: Path, folder: Path, dist: Distribution) -> bool:
    """Is it still whole in `site`, and is each of its regular files in `folder` (a link `_link` leaves out is
    not)? Either failing means something changed it while it was being kept."""
    if not whole(site, dist):
        return False
    return all((folder / path).is_file() for path, _ in dist.files if not (site / path).is_symlink())


def _link(source: Path, target: Path) -> None:
    if not source.is_file() or source.is_symlink():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_file():
        target.unlink()  # a file the stopped installer left in its place
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def settle(kept: Kept, finished: bool, projects: tuple[str, ...] = ("torch",)) -> list[str]:
    """After the installer: where it finished, what the environment holds of `projects` (said only where a stop
    came after it ended); else what it holds of each distribution it changed and of `projects`, each one put back
    or found whole, judged again once mended."""
    with _signals_held():
        said = _finished(kept, projects) if finished else _mend(kept, projects)
        if not any("could not be put back" in line for line in said):
            shutil.rmtree(kept.folder, ignore_errors=True)
        return said


def _finished(kept: Kept, projects: tuple[str, ...]) -> list[str]:
    now = {dist.name: dist for dist in installed(kept.site) if dist.name in projects}
    return [
        line
        for name in sorted(now)
        if (line := _state(name, kept.before.get(name), now[name], False, True, kept)) is not None
    ]


def _mend(kept: Kept, projects: tuple[str, ...]) -> list[str]:
    found = {dist.name: dist for dist in installed(kept.site)}
    whole_now = {name: dist for name, dist in found.items() if _sound(kept, dist)}
    owned = {top for dist in whole_now.values() for top in dist.tops}
    for entry in sorted(_entries(kept.site) - kept.entries - owned):
        _remove(kept.site / entry)  # what the stopped installer wrote that no whole distribution owns
    restored = [name for name in kept.before if name not in whole_now]
    final: dict[str, Distribution] = {}
    for _ in range(3):  # put back, then judge again: a removal half-done on a busy disk is done once more
        for name in (name for name in restored if name not in final):
            _put_back(kept, kept.before[name], owned)
        final = {dist.name: dist for dist in installed(kept.site) if _sound(kept, dist)}
        if all(name in final for name in restored):
            break
    return [
        line
        for name in sorted(set(kept.before) | set(final) | set(found))
        if (line := _state(name, kept.before.get(name), final.get(name), name in restored, name in projects, kept))
    ]


def _sound(kept: Kept, dist: Distribution) -> bool:
    """Whole, and (where it is not the distribution kept, as it was) written out: its RECORD names itself.

    An installer stopped while it extracts a wheel leaves a RECORD cut short whose rows so far name only files
    already there (issue 51: such a torch was taken for whole, its dist-info removed as owned by nothing, and the
    old torch was not put back). A wheel's RECORD names itself in its last row; pip writes its own RECORD whole or
    not at all (a file renamed into place). The kept one is judged as keep() judged it."""
    was = kept.before.get(dist.name)
    if was is not None and was.dist_info == dist.dist_info and was.files == dist.files:
        return whole(kept.site, dist)
    return _written(kept.site, dist)


def _written(site: Path, dist: Distribution) -> bool:
    """Written out by its installer, whole: its RECORD names itself (the wheel's last row), and every file is there."""
    own = f"{dist.dist_info}/RECORD"
    return any(path == own for path, _ in dist.files) and whole(site, dist)


def _put_back(kept: Kept, was: Distribution, owned: set[str]) -> None:
    """One distribution's files back from the links, what stands in their place removed first."""
    for top in was.tops - owned:
        _remove(kept.site / top)
    for path, _ in was.files:
        if (kept.folder / path).is_file():
            _link(kept.folder / path, kept.site / path)


def _state(
    name: str, old: Distribution | None, now: Distribution | None, restored: bool, asked: bool, kept: Kept
) -> str | None:
    """One distribution's state once mended, as said to the user; None where nothing about it is worth saying."""
    if now is None:
        if old is None:
            return f"{name}: what the stopped install wrote of it was removed"
        unlike = list(_unlike(kept.site, old))
        return (
            f"{old.name} {old.version} could not be put back ({len(unlike)} of its {len(old.files)} files missing "
            f"or changed, the first {text.visible(unlike[0]) if unlike else '?'}): its files are kept in {kept.folder}"
        )
    if old is None or old.version != now.version:
        return f"{now.name} {now.version} is there, complete"
    if restored:
        return f"{now.name} {now.version} is there as it was (put back)"
    return f"{now.name} {now.version} is there as it was" if asked else None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _entries(site: Path) -> set[str]:
    return {entry.name for entry in site.iterdir() if not entry.name.startswith(KEPT_PREFIX)}


def installed(site: Path) -> Iterator[Distribution]:
    """Every .dist-info in `site` with its RECORD read (bounded); one without a RECORD has no files."""
    for entry in sorted(site.glob("*.dist-info")):
        name, _, version = entry.name.removesuffix(".dist-info").partition("-")
        if name.startswith("~"):
            continue  # pip's stash of a distribution it is replacing: no distribution of the environment
        yield Distribution(
            name=_NORMAL.sub("_", name).lower(), version=version, dist_info=entry.name, files=_record(entry)
        )


def _record(dist_info: Path) -> tuple[tuple[str, int | None], ...]:
    try:
        with (dist_info / "RECORD").open(encoding="utf-8", errors="replace", newline="") as stream:
            text = stream.read(MAX_RECORD_BYTES + 1)
    except OSError:
        return ()
    if len(text) > MAX_RECORD_BYTES:
        return ()
    rows = []
    for row in csv.reader(text.splitlines()):
        if not row or not row[0] or row[0].startswith("/"):
            continue
        path = os.path.normpath(row[0])
        if path.startswith(".."):
            continue  # a console script beside the environment's bin/: not in site-packages
        size = int(row[2]) if len(row) > 2 and row[2].isdigit() else None
        rows.append((path.replace(os.sep, "/"), size))
    return tuple(rows)


def whole(site: Path, dist: Distribution) -> bool:
    """Every file its RECORD names is there, of the size RECORD gives (RECORD itself and its own line included)."""
    return bool(dist.files) and next(_unlike(site, dist), None) is None


def _unlike(site: Path, dist: Distribution) -> Iterator[str]:
    """The files its RECORD names that are missing, or not of the size RECORD gives."""
    for path, size in dist.files:
        try:
            found = (site / path).stat().st_size
        except OSError:
            yield path
            continue
        if size is not None and found != size:
            yield path


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP ignored while the environment is mended (main thread only, where Python handles
    them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
