"""Running git: never a prompt (a credential or host-key question would hang a batch job), bounded in time, one-line errors."""

from __future__ import annotations

import os
import subprocess

GIT_TIMEOUT_S = 300


def run_git(args: list[str], shown: str, input_bytes: bytes | None = None, timeout_s: float = GIT_TIMEOUT_S) -> bytes:
    """git's stdout; OperationFailed with git's last line of stderr when it fails. `shown` names the repository in errors."""
    from pickvariant._base.errors import OperationFailed

    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes"), "LC_ALL": "C"}
    verb = args[2] if args[:1] == ["-C"] and len(args) > 2 else args[0]
    try:
        result = subprocess.run(["git", *args], input=input_bytes, capture_output=True, timeout=timeout_s, env=env, check=False)
    except FileNotFoundError:
        raise OperationFailed("git is not installed; pickvariant reads build repositories with git") from None
    except subprocess.TimeoutExpired:
        raise OperationFailed(f"git {verb} on {shown} took longer than {timeout_s:g} s") from None
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OperationFailed(f"git {verb} on {shown} failed: {message[-1] if message else f'exit {result.returncode}'}")
    return result.stdout
