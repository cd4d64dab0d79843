"""pickvariant's environment variables, read one way: an empty value means unset.

`PICKVARIANT_GPU=$UNSET_VARIABLE` must not quietly turn an H200 machine into a
CPU-only plan, so a blank value never states a fact.
"""

from __future__ import annotations

from collections.abc import Mapping

from pickvariant._base.errors import BadInput

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
ALL = (CPUINFO, GPU, DRIVER, DRIVER_CUDA, WITH, CATALOG, FLOX_ORG, PYTHON, RECIPES_REPO, LABEL, NETWORK_TIMEOUT)


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
