"""Writing files the way users can trust: atomically, and never over something different without --force."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping, Sequence

from pickvariant._base.errors import BadInput, OperationFailed
from pickvariant._base.text import size_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# Where the files pickvariant ships sit: at the top of a checkout (the design card's catalog.json and recipes/), and
# inside the package in an installed wheel (hatch force-include puts them there: pyproject.toml). Not resolved: a
# realpath costs detect a tenth of a millisecond, and either location is read through the same path it was found by.
# Paths as text, here and in what detect reads: importing pathlib (with urllib.parse and ipaddress, which it imports)
# would cost detect 7 to 8 ms on a 2-core VM, an eighth of its time (benchmarks/detect_speed.py).
PACKAGE = os.path.dirname(os.path.dirname(__file__))
CHECKOUT = os.path.dirname(PACKAGE)


# What Linux allows (limits.h): one name of a path, and a whole path with its terminating NUL.
NAME_MAX = 255
PATH_MAX = 4096


def path_too_long(value: str | os.PathLike[str]) -> str | None:
    """Why the path cannot be one on this system, or None."""
    raw = os.fsencode(value)
    if len(raw) >= PATH_MAX:
        return f"the path is {len(raw)} bytes long; a path may be {PATH_MAX - 1} at most (PATH_MAX)"
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        return f"a name in the path is {len(longest)} bytes long; a name may be {NAME_MAX} at most (NAME_MAX)"
    return None


def check_path_length(value: str | os.PathLike[str], what: str) -> None:
    """BadInput naming `what` (an option or variable) when the path cannot be one on this system: one line, exit 2,
    before anything tries to open it."""
    why = path_too_long(value)
    if why is not None:
        raise BadInput(f"{what}: {why}")


def shipped(in_package: str, at_top: str) -> str:
    """A shipped file: the packaged copy where there is one (an installed wheel), else the checkout's at the top.
    A checkout and a wheel read the same bytes: the wheel's are copies the build made of the checkout's."""
    packaged = os.path.join(PACKAGE, in_package)
    return packaged if os.path.exists(packaged) else os.path.join(CHECKOUT, at_top)


def joined(prefix: str, *parts: str) -> str:
    """`prefix/part/…` (each part relative) as pathlib writes it (repeated slashes and "." parts dropped, ".." kept,
    POSIX's two leading slashes kept), without importing pathlib where detect reads files."""
    if os.name == "nt":
        from pathlib import Path

        return str(Path(prefix, *parts))
    given = [part for part in (prefix, *parts) if part]
    first = given[0] if given else ""
    lead = "//" if first.startswith("//") and not first.startswith("///") else "/" if first.startswith("/") else ""
    return lead + "/".join(name for part in given for name in part.split("/") if name not in ("", ".")) or "."


def cache_folder(env: Mapping[str, str] | None = None) -> str:
    """Where pickvariant keeps what it may lose (recipes, logs, the last install), as text: $XDG_CACHE_HOME/pickvariant
    or ~/.cache/pickvariant."""
    env = os.environ if env is None else env
    given = env.get("XDG_CACHE_HOME")
    if not given:
        home = os.path.expanduser(env.get("HOME", "~"))
        if home.startswith("~"):
            raise BadInput("HOME is not set and the home folder is not known: set HOME, or XDG_CACHE_HOME")
        given = joined(home, ".cache")
    check_path_length(given, "XDG_CACHE_HOME" if env.get("XDG_CACHE_HOME") else "HOME")
    return joined(given, "pickvariant")


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """cache_folder as a Path."""
    from pathlib import Path

    return Path(cache_folder(env))


def own_cache(env: Mapping[str, str] | None = None, *parts: str) -> Path:
    """A folder of the cache (`cache_dir(env) / parts…`), made if missing, that only this user controls.

    Every folder from the cache's root down is checked as git checks a repository (safe.directory): a symbolic
    link, a folder another user owns, or one that group or others may write is refused (BadInput, naming it and
    the fix), so that nobody else can plant what pickvariant reads there or point its writes elsewhere. The folder
    the cache sits in (XDG_CACHE_HOME) may be shared only if it is sticky, as /tmp is: then no other user can
    rename pickvariant's folder away."""
    root = cache_dir(env)
    try:
        root.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise OperationFailed(
            f"cannot create the cache folder {root.parent}: {error.strerror or error}; {_FIX}"
        ) from None
    _check_parent(root.parent)
    return own_folders(root, *parts)


def own_folders(root: Path, *parts: str) -> Path:
    """`root / parts…`, each folder made if missing (0700) and checked by check_own_folder."""
    path = root
    for part in ("", *parts):
        path = path / part if part else path
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as error:
            raise OperationFailed(f"cannot create the cache folder {path}: {error.strerror or error}; {_FIX}") from None
        check_own_folder(path)
    return path


_FIX = "set XDG_CACHE_HOME to a folder of your own"


def check_own_folder(path: Path) -> None:
    """BadInput unless `path` is a real folder of this user that nobody else may write."""
    try:
        status = os.lstat(path)
    except OSError as error:
        raise OperationFailed(f"cannot read the cache folder {path}: {error.strerror or error}") from None
    if stat.S_ISLNK(status.st_mode):
        raise BadInput(
            f"the cache folder {path} is a symbolic link, which pickvariant never follows: remove it, or {_FIX}"
        )
    if not stat.S_ISDIR(status.st_mode):
        raise BadInput(f"the cache folder {path} is not a folder: remove it, or {_FIX}")
    if status.st_uid != os.geteuid():
        raise BadInput(f"the cache folder {path} belongs to another user (uid {status.st_uid}): remove it, or {_FIX}")
    if status.st_mode & 0o022:
        raise BadInput(
            f"the cache folder {path} may be written by others (mode {stat.S_IMODE(status.st_mode):04o}): "
            f"run chmod go-w {path}, or {_FIX}"
        )


def _check_parent(parent: Path) -> None:
    """A parent every user may write (a shared XDG_CACHE_HOME) must be sticky, as /tmp is, or anyone could swap
    pickvariant's folder there for theirs between a check and a use. A group-writable one (a user's private group,
    umask 002) is left to the group: pickvariant's own folders below it are checked at every use."""
    try:
        status = os.stat(parent)
    except OSError:
        return
    if status.st_mode & 0o002 and not status.st_mode & stat.S_ISVTX:
        raise BadInput(
            f"the cache's parent folder {parent} may be written by every user and is not sticky: "
            f"another user could replace pickvariant's cache there; {_FIX}"
        )


def read_regular(path: str | os.PathLike[str], limit: int, what: str, follow: bool = True) -> bytes:
    """At most `limit` bytes of a regular file; a FIFO, device or directory is refused before any read can block.

    Raises BadInput naming the file (its content is the user's input), also when it is larger than `limit`.
    `follow=False`: a symbolic link in the file's place is refused, never followed (files of the cache).
    """
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | (0 if follow else os.O_NOFOLLOW)
        fd = os.open(path, flags)
    except OSError as error:
        raise BadInput(f"cannot read {what} {path}: {error.strerror or error}") from error
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise BadInput(f"cannot read {what} {path}: it is not a regular file (a pipe, device or directory)")
        raw = _read_bounded(fd, status.st_size, limit)
    except OSError as error:
        raise BadInput(f"cannot read {what} {path}: {error.strerror or error}") from error
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise BadInput(f"{what} {path} is larger than {size_text(limit)}")
    return raw


# How long a pipe or FIFO given as input (`--cpuinfo -`, `--cpuinfo <(ssh host cat /proc/cpuinfo)`) may take
# to deliver all of it: one nothing writes to is refused after this, never waited on for ever.
PIPE_WAIT_S = 60.0


def read_input(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """read_regular for a file; `-` (stdin), a pipe or a FIFO read as their writer writes, with the same
    bound in bytes and PIPE_WAIT_S in all. A device, a directory or a terminal is refused before any read."""
    stdin = str(path) == "-"
    try:
        fd = os.dup(0) if stdin else os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise BadInput(f"cannot read {what} {'from stdin' if stdin else path}: {error.strerror or error}") from error
    shown = "stdin" if stdin else str(path)
    try:
        status = os.fstat(fd)
        if stat.S_ISREG(status.st_mode):
            raw = _read_bounded(fd, status.st_size, limit)
        elif stat.S_ISFIFO(status.st_mode) or stat.S_ISSOCK(status.st_mode):
            raw = _read_pipe(fd, limit, what, shown)
        else:
            kind = "a terminal" if os.isatty(fd) else "a device or directory"
            raise BadInput(f"cannot read {what} {shown}: it is {kind}, not a regular file, pipe or FIFO")
    except OSError as error:
        raise BadInput(f"cannot read {what} {shown}: {error.strerror or error}") from error
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise BadInput(f"{what} {shown} is larger than {size_text(limit)}")
    return raw


def _read_pipe(fd: int, limit: int, what: str, shown: str) -> bytes:
    import select
    import time

    os.set_blocking(fd, False)
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    deadline = time.monotonic() + PIPE_WAIT_S
    pieces: list[bytes] = []
    size = 0
    while size <= limit:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            raise BadInput(
                f"{what} {shown}: {'nothing' if not size else 'not all of it'} arrived within {PIPE_WAIT_S:g} s"
            )
        try:
            piece = os.read(fd, min(_PIECE, limit + 1 - size))
        except BlockingIOError:
            continue
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    return b"".join(pieces)


_PIECE = 64 * 1024


def _read_bounded(fd: int, size: int, limit: int) -> bytes:
    """Up to limit + 1 bytes: one read where fstat gives the size (asking for one byte more shows
    whether the file grew); pieces until the end where it gives 0, as /proc and /sys files do.
    Asking for the whole limit at once would allocate it for every small file."""
    first = os.read(fd, min(size, limit) + 1) if size else b""
    if size and len(first) == size:  # all of it, and nothing where the extra byte was asked for
        return first
    pieces, total = [first], len(first)
    while total <= limit:
        piece = os.read(fd, min(_PIECE, limit + 1 - total))
        if not piece:
            break
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)


def check_inside(path: Path, root: Path) -> None:
    """Refuse a path that resolves (through `..` or symbolic links) outside `root`."""
    resolved = resolved_path(path)
    if not resolved.is_relative_to(resolved_path(root)):
        raise BadInput(f"{path} resolves to {resolved}, outside {root}: refusing to write there")


def resolved_path(path: Path) -> Path:
    """path.resolve(), with a symbolic-link loop or an unreadable directory on the way as a clear error."""
    try:
        return path.resolve()
    except RuntimeError as error:  # Python < 3.13 reports a loop so
        raise BadInput(f"{path}: a loop of symbolic links") from error
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise BadInput(f"{path}: a loop of symbolic links") from error
        raise OperationFailed(f"cannot look at {path}: {error.strerror or error}") from error


def check_output_dir(directory: Path) -> None:
    """A directory to write into: it exists as one, or can be created; anything else is said plainly."""
    try:
        info = os.stat(directory)
    except FileNotFoundError:
        if os.path.islink(directory):
            raise BadInput(
                f"{directory} is a symbolic link to {os.readlink(directory)}, which does not exist"
            ) from None
        return
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise BadInput(f"{directory}: a loop of symbolic links") from None
        raise OperationFailed(f"cannot look at {directory}: {error.strerror or error}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{directory} exists and is not a directory")


def check_writable(path: Path, text: str, force: bool, root: Path | None = None) -> bool:
    """True when `path` must be written; False when it already holds exactly `text`."""
    if root is not None:
        check_inside(path.parent, root)
    try:
        if path.is_symlink():
            raise BadInput(f"{path} is a symbolic link: refusing to write through it")
        exists = path.exists()
    except PermissionError as error:
        raise OperationFailed(f"cannot look at {path}: {error.strerror or error}") from error
    if exists:
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


def create_new(directory: Path, stem: str, suffix: str) -> Path:
    """Create an empty file that did not exist before (stem, stem-1, ...): nothing is ever appended to an old one."""
    directory.mkdir(parents=True, exist_ok=True)
    for attempt in range(1000):
        path = directory / f"{stem}{f'-{attempt}' if attempt else ''}{suffix}"
        try:
            with open(path, "x", encoding="utf-8"):
                return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory / stem}{suffix} and 999 numbered versions exist")


def write_atomic(path: Path, content: str | bytes, mode: int = 0o644) -> None:
    """Write to a temporary file beside `path`, then rename it over: readers never see half a file.

    A file that is replaced keeps its permissions; bytes are written exactly as given.
    """
    write_together([(path, content)], mode)


def write_together(files: Sequence[tuple[Path, str | bytes]], mode: int = 0o644) -> None:
    """Several files that belong together (a catalog and its companions) written as one: each is staged whole beside
    its place first, and only when every one is staged are they renamed over; where staging one fails (a full
    disk), none is replaced and the staged ones are removed."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, content in files:
            staged.append((_stage(path, content, mode), path))
        for temp, path in staged:
            try:
                os.replace(temp, path)
            except OSError as error:
                raise OperationFailed(f"cannot write {path}: {error.strerror or error}") from error
    finally:
        for temp, _ in staged:
            try:  # noqa: SIM105  # not contextlib.suppress: importing contextlib costs detect 0.6 ms
                os.unlink(temp)
            except OSError:
                pass


def _stage(path: Path, content: str | bytes, mode: int) -> str:
    """`content` written and synced to a new temporary file beside `path`: its name."""
    # Imported here: tempfile brings shutil and random (5 ms), and detect, which never writes, imports this module.
    import tempfile

    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file():
            mode = path.stat().st_mode & 0o7777
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise OperationFailed(f"cannot write {path}: {error.strerror or error}") from error
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
    except OSError as error:
        try:  # noqa: SIM105  # not contextlib.suppress: importing contextlib costs detect 0.6 ms
            os.unlink(temp)
        except OSError:
            pass
        raise OperationFailed(f"cannot write {path}: {error.strerror or error}") from error
    return temp
