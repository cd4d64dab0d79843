"""A `detect --format json` object's "hardware" read back into HostFacts (machine/facts.py), as `plan` reads each
node's detect line: pure, each field checked, a malformed one named."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pickvariant._base.errors import BadInput
from pickvariant._base.versions import parse_compute_capability, parse_driver_version
from pickvariant.machine.cpu import CpuFacts
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import DriverFacts, GpuFacts
from pickvariant.machine.othergpu import PCI_ID, STATED_GFX, OtherGpu, target_id, target_id_parts
from pickvariant.sources.hardware import Hardware

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def facts_from_json(hardware: Mapping[str, object], catalog: Hardware) -> HostFacts:
    """The facts a `detect --format json` object's "hardware" holds, read back (for `plan`); pure.

    Raises BadInput naming the field that is missing or malformed."""

    def need(mapping: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
        value = mapping.get(key)
        if not isinstance(value, kind):
            raise BadInput(
                f"{where}.{key} is missing or not a{'n' if kind.__name__[0] in 'aeio' else ''} {kind.__name__}"
            )
        return value

    os_name, arch = need(hardware, "os", str, "hardware"), need(hardware, "arch", str, "hardware")
    cpu = need(hardware, "cpu", Mapping, "hardware")
    flags = need(cpu, "flags", list, "hardware.cpu")
    if not all(isinstance(flag, str) for flag in flags):
        raise BadInput("hardware.cpu.flags holds something that is not a string")
    model = cpu.get("model") if isinstance(cpu.get("model"), str) else None
    cpu_facts = CpuFacts(
        os=os_name, arch=arch, model=model, flags=catalog.canonical_flags(frozenset(flags)), source="detect JSON"
    )
    gpus = []
    for index, gpu in enumerate(need(hardware, "gpus", list, "hardware")):
        where = f"hardware.gpus[{index}]"
        if not isinstance(gpu, Mapping):
            raise BadInput(f"{where} is not an object")
        capability = parse_compute_capability(need(gpu, "compute_capability", str, where))
        name = gpu["name"] if isinstance(gpu.get("name"), str) else "GPU"
        gpus.append(GpuFacts(index=index, name=name, compute_capability=capability))
    driver_json = hardware.get("driver")
    driver = None
    if isinstance(driver_json, Mapping):
        version, cuda = driver_json.get("version"), driver_json.get("cuda")
        driver = DriverFacts(
            parse_driver_version(version) if isinstance(version, str) else None, cuda if isinstance(cuda, str) else None
        )
    elif driver_json is not None:
        raise BadInput("hardware.driver is neither an object nor null")
    listed = hardware.get("other_gpus")  # absent from lines of a pickvariant before AMD and Intel detection
    if listed is not None and not isinstance(listed, list):
        raise BadInput("hardware.other_gpus is not a list")
    others = tuple(_other_gpu(index, gpu) for index, gpu in enumerate(listed or ()))
    return HostFacts(
        os=os_name,
        arch=arch,
        cpu=cpu_facts,
        gpus=tuple(gpus),
        driver=driver,
        driver_assumed=hardware.get("driver_assumed") is True,
        gpu_inconclusive=hardware.get("gpu_detection_inconclusive") is True,
        sources={"all": "detect JSON"},
        other_gpus=others,
    )


def _other_gpu(index: int, gpu: object) -> OtherGpu:
    """An AMD or Intel GPU of a detect line (machine/othergpu.py's record), each field as detect writes it."""
    where = f"hardware.other_gpus[{index}]"
    if not isinstance(gpu, Mapping) or gpu.get("vendor") not in ("amd", "intel"):
        raise BadInput(f"{where} is not an object naming its vendor (amd or intel)")
    target, device = gpu.get("target"), gpu.get("device_id")
    if target is not None and (not isinstance(target, str) or re.fullmatch(STATED_GFX, target) is None):
        raise BadInput(f"{where}.target is not a gfx target such as gfx1100")
    if device is not None and (not isinstance(device, str) or re.fullmatch(PCI_ID, device) is None):
        raise BadInput(f"{where}.device_id is not a PCI id such as 0x744c")
    features = gpu.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise BadInput(f"{where}.features is not a list of target features such as sramecc+")
    if features and target is None:
        raise BadInput(
            f"{where}.features: features of no gfx target (an Intel GPU's, or one stated without its target)"
        )
    if features:  # the target ID they make, judged as --gpu's is: one line naming the field where it is none
        target_id_parts(target_id(str(target), features), f"{where}.features")
    driver = gpu.get("driver")
    shown = driver if isinstance(driver, str) and driver.isascii() and driver.isprintable() else None
    return OtherGpu(
        vendor=gpu["vendor"],
        index=index,
        target=target,
        device_id=device,
        driver=shown,
        source="detect JSON",
        features=tuple(features),
    )
