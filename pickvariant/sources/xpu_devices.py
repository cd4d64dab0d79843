"""The Intel GPUs PyTorch's XPU wheels serve, by PCI device id: data/intel-xpu-devices.json (its sources there).

Each id belongs to one family, named as the AOT targets of torch-xpu-ops name it without their suffix ("mtl" for
"mtl-h"); an id of no family (an old iGPU, a Data Center GPU Flex) is one the facts do not name, which no XPU build
is chosen for."""

from __future__ import annotations

import functools
import json
import os

_DATA = os.path.join(os.path.dirname(os.path.realpath(__file__)), "data", "intel-xpu-devices.json")
_MAX_BYTES = 64 * 1024


@functools.cache
def _families() -> dict[str, str]:
    from pickvariant._base.files import read_regular

    document = json.loads(read_regular(_DATA, _MAX_BYTES, "Intel XPU devices").decode("utf-8"))
    return {device: family for family, devices in document["families"].items() for device in devices}


def family_of(device_id: str | None) -> str | None:
    """The family ("bmg", "pvc", "mtl") of an Intel GPU's PCI device id ("0xe20b"), None where the facts name none."""
    if device_id is None:
        return None
    return _families().get(device_id.lower())


def aot_for(family: str, aot: tuple[str, ...]) -> str | None:
    """The AOT target of `aot` built for that family ("mtl-h" for "mtl"), None where it has none."""
    return next((target for target in aot if target == family or target.split("-")[0] == family), None)
