"""pickvariant's environment variables, read one way: an empty value means unset.

`PICKVARIANT_GPU=$UNSET_VARIABLE` must not quietly turn an H200 machine into a
CPU-only plan, so a blank value never states a fact.
"""

from __future__ import annotations

from collections.abc import Mapping

from pickvariant._base.errors import BadInput
from pickvariant._base.urls import public_url

CPUINFO = "PICKVARIANT_CPUINFO"
GPU = "PICKVARIANT_GPU"
DRIVER = "PICKVARIANT_DRIVER"
DRIVER_CUDA = "PICKVARIANT_DRIVER_CUDA"
WITH = "PICKVARIANT_WITH"
CATALOG = "PICKVARIANT_CATALOG"
FLOX_ORG = "PICKVARIANT_FLOX_ORG"
PYTHON = "PICKVARIANT_PYTHON"
RECIPES_REPO = "PICKVARIANT_RECIPES_REPO"
LABEL = "PICKVARIANT_LABEL"
NETWORK_TIMEOUT = "PICKVARIANT_NETWORK_TIMEOUT"
SOURCE = "PICKVARIANT_SOURCE"
INSTALLER = "PICKVARIANT_INSTALLER"
WHEEL_INDEX = "PICKVARIANT_WHEEL_INDEX"
# The sysfs root AMD and Intel GPUs are read from (default /sys): a container that mounts the host's elsewhere.
SYSFS = "PICKVARIANT_SYSFS"
ALL = (
    CPUINFO,
    GPU,
    DRIVER,
    DRIVER_CUDA,
    WITH,
    CATALOG,
    FLOX_ORG,
    PYTHON,
    RECIPES_REPO,
    LABEL,
    NETWORK_TIMEOUT,
    SOURCE,
    INSTALLER,
    WHEEL_INDEX,
    SYSFS,
)


def wheel_index(stated: str | None, env: Mapping[str, str], default: str) -> str:
    """The root of PyTorch's wheel indexes (ROOT/cu126/torch/...): --wheel-index, else PICKVARIANT_WHEEL_INDEX, else
    PyTorch's own. A value that is not a plain http(s) or file URL is refused: it is printed for the shell and
    written into requirements and TOML."""
    given, value = ("--wheel-index", stated) if stated is not None else (WHEEL_INDEX, setting(env, WHEEL_INDEX))
    if value is None:
        return default
    plain = value.isascii() and value.isprintable() and not any(c in value for c in " \"'`$<>\\")
    if not plain or len(value) > 2000 or not value.startswith(("https://", "http://", "file:///")):
        raise BadInput(f"{given} {public_url(value)!r:.80}: not a plain http(s):// or file:/// URL of an index root")
    if "?" in value or "#" in value:
        # ROOT/cu126 would land in the query or the fragment, and pip would read another index than the one named.
        raise BadInput(
            f"{given} {public_url(value)!r:.80}: an index root with a query or a fragment ('?', '#'): give the "
            "root alone (credentials go in user:password@ or in netrc)"
        )
    return value.rstrip("/")


def setting(env: Mapping[str, str], name: str) -> str | None:
    """The variable's value, or None when it is unset or holds only white space."""
    value = env.get(name)
    return value if value is not None and value.strip() else None


DEFAULT_NETWORK_TIMEOUT_S = 120.0


def network_timeout(env: Mapping[str, str]) -> float:
    """How long one operation's git network traffic may take in all: PICKVARIANT_NETWORK_TIMEOUT, else 120 s."""
    stated = setting(env, NETWORK_TIMEOUT)
    if stated is None:
        return DEFAULT_NETWORK_TIMEOUT_S
    try:
        seconds = float(stated)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 86400:
        raise BadInput(f"{NETWORK_TIMEOUT}={stated!r:.40} is not a number of seconds between 0 and 86400")
    return seconds
