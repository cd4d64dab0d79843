"""What a Flox environment already holds, read from its manifest before anything is added to it.

The manifest is the user's file in a directory they named: it is read bounded, and only as a regular file
(a FIFO or device in its place is refused, never waited on). A PyTorch build there, or a companion that brings
one (its torch is a propagated input), is a torch: install never adds a second one beside it.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pickvariant._base.errors import BadInput
from pickvariant._base.files import read_regular
from pickvariant.sources.flox.install import floxcontract

# A manifest is a few KiB; one this large is not one flox wrote.
MANIFEST_LIMIT = 4 * 1024 * 1024
# What brings a torch: the build repositories' packages (pytorch-python313-…, torchvision-python313-…), and
# nixpkgs' own torch and the packages built against it (python313Packages.torch, …torchvision).
_BRINGS_TORCH = re.compile(
    r"^(?:(?:pytorch|torchvision|torchaudio|vllm)-python\d+-|(?:torch|torch-bin|pytorch|torchvision|torchaudio|vllm)$)"
)


def _manifest(target: Path) -> Mapping[str, Any]:
    """The environment's manifest as TOML; empty where there is none (or flox will refuse it with its own message)."""
    manifest = target / floxcontract.contract()["files"]["manifest"]
    if not manifest.exists() and not manifest.is_symlink():
        return {}
    raw = read_regular(manifest, MANIFEST_LIMIT, "the Flox manifest")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def installed(target: Path) -> Mapping[str, Mapping[str, Any]]:
    """The manifest's `[install]` table by install id; empty where there is no environment (or flox will refuse it)."""
    table = _manifest(target).get("install", {})
    return {key: value for key, value in table.items() if isinstance(value, dict)} if isinstance(table, dict) else {}


def systems(target: Path) -> tuple[str, ...] | None:
    """The systems the environment is written out for (`options.systems`, what its lock follows); None where it
    names none (flox then uses its defaults)."""
    options = _manifest(target).get("options", {})
    found = options.get("systems") if isinstance(options, dict) else None
    if not isinstance(found, list) or not all(isinstance(system, str) for system in found):
        return None
    return tuple(found)


def package_name(install_id: str, spec: Mapping[str, Any]) -> str:
    """The package an install entry is: its pkg-path's last part (`acme/pytorch-…`, `python313Packages.torch`), its
    store path's name without the hash, or its id."""
    pkg_path, store_path = spec.get("pkg-path"), spec.get("store-path")
    if isinstance(pkg_path, str) and pkg_path:
        return pkg_path.rsplit("/", 1)[-1].rsplit(".", 1)[-1]
    if isinstance(store_path, str) and store_path:
        return re.sub(r"^[0-9a-z]{32}-", "", store_path.rstrip("/").rsplit("/", 1)[-1])
    return install_id


def check_one_torch(target: Path, adding: Sequence[str]) -> None:
    """Refuse to add packages that bring a torch to an environment that already holds another one."""
    present = {
        install_id: package_name(install_id, spec)
        for install_id, spec in installed(target).items()
        if _BRINGS_TORCH.match(package_name(install_id, spec))
    }
    wanted = {name for name in adding if _BRINGS_TORCH.match(name)}
    others = sorted(install_id for install_id, name in present.items() if not any(name.startswith(w) for w in wanted))
    if not others or not wanted:
        return
    shown = ", ".join(f"{install_id} ({present[install_id]})" for install_id in others)
    removal = " ".join(shlex.quote(install_id) for install_id in others)
    raise BadInput(
        f"{target} already holds {shown}, which brings a PyTorch build; adding {', '.join(sorted(wanted))} would put a "
        f"second one in the same environment: install into another --dir, or remove it first "
        f"(flox uninstall -d {shlex.quote(str(target))} {removal})"
    )
