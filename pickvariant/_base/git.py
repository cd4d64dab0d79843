"""Running git on repositories pickvariant does not control: never a prompt, never a program a repository names, bounded in time.

A repository's own configuration (its .git/config arrives with tarballs, shared directories and CI
caches) can name programs that git runs: a signature checker (log.showSignature with gpg.program), an
fsmonitor, hooks, a pager, an external diff, a credential helper, an ssh command, a proxy command,
an upload-pack; an `ext::` URL runs whatever it says. So:

- git never runs inside a repository pickvariant does not own. A local clone is copied with
  `git clone --mirror --no-local` (git(1), SECURITY: cloning is the safe way to look at an untrusted
  repository; only git-upload-pack runs in it, and git keeps that safe for untrusted repositories);
  every other command runs in pickvariant's own temporary or cache repository, and repository
  discovery stops there (GIT_CEILING_DIRECTORIES), so a checkout around the current directory is
  never read either.
- every call overrides, on its command line (the highest precedence git has), each setting that
  makes git run a program, and allows only the transports pickvariant needs (file, git, http(s),
  ssh); the environment cannot widen that (GIT_ALLOW_PROTOCOL is set, not inherited).
- every call has a time limit, and a URL is shown without the user name or password it may carry.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from pickvariant._base.errors import OperationFailed
from pickvariant._base.urls import public_url, without_credentials

GIT_TIMEOUT_S = 300
ALLOWED_PROTOCOLS = ("file", "git", "http", "https", "ssh")
# Each of these names a program git would run; all are switched off. Credential helpers, core.askPass and
# core.sshCommand are left to the user's own configuration (a private repository needs them): git never runs
# where a repository's own configuration would be read, so they can come from nowhere else.
HARDENED_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "core.alternateRefsCommand=",
    "diff.external=",
    "log.showSignature=false",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "protocol.allow=never",
    *(f"protocol.{name}.allow=always" for name in ALLOWED_PROTOCOLS),
)
# Variables that would point git at another repository, inject configuration or choose a program.
_DROPPED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "PAGER",
    "GIT_EDITOR",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
)


class GitTimeout(OperationFailed):
    """git ran past its time limit and was stopped."""


def git_environment(workdir: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in _DROPPED_ENV
        and not name.startswith("GIT_CONFIG_KEY_")
        and not name.startswith("GIT_CONFIG_VALUE_")
    }
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ALLOW_PROTOCOL": ":".join(ALLOWED_PROTOCOLS),
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_CEILING_DIRECTORIES": str(workdir.parent),
            "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes"),
            "LC_ALL": "C",
        }
    )
    return env


def run_git(
    args: list[str],
    shown: str,
    workdir: Path,
    input_bytes: bytes | None = None,
    timeout_s: float = GIT_TIMEOUT_S,
    config: tuple[str, ...] = (),
) -> bytes:
    """git's stdout, run in `workdir` (a directory or repository of pickvariant's own), with `config` for this call only.

    OperationFailed with git's last line of stderr when it fails; `shown` names the repository in errors."""
    hardened = [part for setting in (*HARDENED_CONFIG, *config) for part in ("-c", setting)]
    verb = args[0]
    try:
        result = subprocess.run(
            ["git", *hardened, *args],
            input=input_bytes,
            capture_output=True,
            timeout=timeout_s,
            env=git_environment(workdir),
            cwd=workdir,
            check=False,
        )
    except FileNotFoundError:
        raise OperationFailed("git is not installed; pickvariant reads build repositories with git") from None
    except subprocess.TimeoutExpired:
        raise GitTimeout(f"git {verb} on {public_url(shown)} took longer than {timeout_s:g} s") from None
    if result.returncode != 0:
        raise OperationFailed(
            f"git {verb} on {public_url(shown)} failed: {git_said(result.stderr.decode('utf-8', 'replace'), result.returncode, shown)}"
        )
    return result.stdout


def git_said(stderr: str, returncode: int, address: str | None = None) -> str:
    """git's reason in one line: its first fatal or error line (the last is often only "and the repository
    exists."), and for a repository owned by someone else, what that means and what to do."""
    if "detected dubious ownership" in stderr:
        where = re.search(r"repository at '([^']*)'", stderr)
        path = where.group(1) if where else "it"
        return (
            f"the repository {path} belongs to another user, and git reads such repositories only when told to trust them "
            f"(safe.directory): if you do, `git config --global --add safe.directory {shlex.quote(path)}`; or give a clone of your own"
        )
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    chosen = next(
        (line for line in lines if line.startswith(("fatal:", "error:"))), lines[-1] if lines else f"exit {returncode}"
    )
    return without_credentials(chosen, address)


def stream_blobs(
    repository: Path, shown: str, blob_ids: Sequence[str], max_bytes: int, timeout_s: float = GIT_TIMEOUT_S
) -> Iterator[tuple[str, bytes]]:
    """(blob id, content) of each blob in turn, through one `git cat-file --batch` in pickvariant's own `repository`.

    One blob is in memory at a time, and none larger than `max_bytes` is read (its id comes with
    b"" and the caller, who knows the size from ls-tree, reports it): memory is bounded by the
    largest recipe, not by the sum of them. The whole read has one time limit."""
    hardened = [part for setting in HARDENED_CONFIG for part in ("-c", setting)]
    try:
        process = subprocess.Popen(
            ["git", *hardened, "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=repository,
            env=git_environment(repository),
        )
    except FileNotFoundError:
        raise OperationFailed("git is not installed; pickvariant reads build repositories with git") from None
    assert process.stdin is not None and process.stdout is not None
    watchdog = threading.Timer(timeout_s, process.kill)
    watchdog.start()
    try:
        for blob in blob_ids:
            process.stdin.write(f"{blob}\n".encode())
            process.stdin.flush()
            header = process.stdout.readline(200).split()
            if len(header) != 3 or not header[2].isdigit():
                if process.poll() is not None and not watchdog.is_alive():
                    raise OperationFailed(f"git cat-file on {public_url(shown)} took longer than {timeout_s:g} s")
                raise OperationFailed(
                    f"git cat-file on {public_url(shown)}: unexpected answer for {blob[:12]}: {b' '.join(header)[:80]!r}"
                )
            size = int(header[2])
            if size > max_bytes:
                _skip(process.stdout, size + 1)
                yield blob, b""
                continue
            content = process.stdout.read(size + 1)
            if len(content) != size + 1:
                raise OperationFailed(f"git cat-file on {public_url(shown)} stopped in the middle of {blob[:12]}")
            yield blob, content[:size]
    except BrokenPipeError:
        raise OperationFailed(f"git cat-file on {public_url(shown)} stopped answering") from None
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()


def _skip(stream: IO[bytes], count: int) -> None:
    while count > 0:
        chunk = stream.read(min(count, 1 << 16))
        if not chunk:
            return
        count -= len(chunk)
