"""GPUs of other vendors than NVIDIA: AMD GPUs from the kernel's KFD topology, Intel GPUs from the DRM devices.

Facts only, read from sysfs with no vendor library or runtime installed; pickvariant does not yet choose builds for
them (rules/stages.hardware_reasons says so of each, in every source's answer).

- AMD: each node of /sys/class/kfd/kfd/topology/nodes/ whose `properties` (one "name value" line per property, as the
  kernel's kfd_topology.c prints them) has a nonzero `gfx_target_version` and AMD's PCI vendor id 4098 (0x1002) is a
  GPU; a CPU node has 0. The version is major * 10000 + minor * 100 + stepping (the kernel's kfd_device.c: Aldebaran,
  the MI200 series, is 90010), and the target is named "gfx" + major + minor and stepping as hex digits: 90010 is
  gfx90a, 90402 gfx942, 110000 gfx1100. The amdgpu module's version, where its DKMS build sets one
  (/sys/module/amdgpu/version), is its driver.
- An AMD GPU's target features, as the ROCm runtime names its target ID by default: `sramecc` only on the
  processors that have it (ROCR-Runtime's isa.cpp: gfx908, gfx90a, gfx940, gfx941, gfx942, gfx950), "+" where the
  node's `capability` has HSA_CAP_SRAM_EDCSUPPORTED (0x04000000, the kernel's kfd_topology.h; kfd_topology.c sets it
  where RAS is on for the GFX block; ROCR-Runtime's GpuAgent reads it as SRAM_EDCSupport), "-" where not, and always
  "+" on a gfx908 (ROCR-Runtime's topology: its VBIOS sets SRAM ECC on). `xnack` is a mode of each process (the
  amdgpu module's noretry parameter, HSA_XNACK), not of the node: it is never read, left unsaid (any).
- Intel: each /sys/class/drm/cardN whose device's PCI vendor is 0x8086 and class a display controller (0x03xxxx), with
  its device id and the kernel driver bound to it (i915 or xe).

Every read is bounded (a few KiB, a few dozen nodes) and a file that cannot be read or does not say what it must is
skipped: detection never fails for another vendor's GPU.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from pickvariant._base.errors import BadInput
from pickvariant._base.files import read_regular
from pickvariant._base.records import keyword_record, replace

# Under the sysfs root (/sys, or PICKVARIANT_SYSFS: a container that mounts the host's elsewhere).
KFD_NODES = "class/kfd/kfd/topology/nodes"
DRM_CLASS = "class/drm"
AMDGPU_VERSION = "module/amdgpu/version"
AMD_VENDOR_ID = 4098  # 0x1002
VENDOR_NAMES = {"amd": "AMD", "intel": "Intel"}  # an OtherGpu's vendor as sentences name it
INTEL_VENDOR = "0x8086"
MAX_NODES = 64
MAX_READ = 16 * 1024
# The node `capability` bit that says SRAM ECC is on (the kernel's HSA_CAP_SRAM_EDCSUPPORTED; 0x00080000 was it once,
# now HSA_CAP_RESERVED_WAS_SRAM_EDCSUPPORTED, never read).
SRAM_EDC_SUPPORTED = 0x04000000
# The processors with an sramecc target feature (ROCR-Runtime, runtime/hsa-runtime/core/runtime/isa.cpp: those whose
# entries name sramecc enabled or disabled; gfx906's entries accept any setting, so it is named with none).
SRAMECC_TARGETS = frozenset({"gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"})
ALWAYS_SRAMECC = frozenset({"gfx908"})  # ROCR-Runtime's topology sets it on for these, whatever the node says
# The processors a stated target ID may name each feature for (the same table: every entry not "unsupported").
STATED_FEATURES = {
    "sramecc": SRAMECC_TARGETS | {"gfx906"},
    "xnack": frozenset(
        {"gfx810", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c"}
        | {"gfx940", "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011", "gfx1012", "gfx1013"}
    ),
}

# Patterns as text, compiled by re's own cache where first used: none is on the path of a machine without these GPUs.
_CARD = r"card[0-9]{1,3}"
PCI_ID = r"0x[0-9a-f]{4}"
_DRIVER = r"[a-z0-9_]{1,32}"
_MODULE_VERSION = r"[0-9A-Za-z.+_-]{1,40}"
# A gfx target as it is written: gfx, a major of one or two digits, then minor and stepping as one hex digit each.
STATED_GFX = r"gfx([0-9]{1,2})([0-9a-f])([0-9a-f])"
# A target ID (LLVM's AMDGPUUsage): the target, then each feature it names with + or -, sramecc before xnack.
STATED_TARGET_ID = STATED_GFX + r"((?::sramecc[+-])?(?::xnack[+-])?)"
STATED_XPU = r"xpu(?::(0x[0-9a-f]{4}))?"


@keyword_record
class OtherGpu:
    vendor: str  # "amd" or "intel"
    index: int  # in the order read: KFD node order (AMD), DRM card order (Intel); a stated one, as stated
    target: str | None  # the gfx target ("gfx1100") of an AMD GPU; None for Intel's
    device_id: str | None  # the PCI device id, "0x744c"; None where stated without one
    driver: str | None  # "amdgpu 6.10.5" (its DKMS module's version), "xe", "i915"; None where not known
    source: str  # where it was read: "KFD topology node 1", "DRM card0", "--gpu"
    # The target features known, each with its setting, in target ID order: ("sramecc+",); none said is any.
    features: tuple[str, ...] = ()

    def as_json(self) -> dict[str, object]:
        return {
            "vendor": self.vendor,
            "index": self.index,
            "target": self.target,
            "features": list(self.features),
            "device_id": self.device_id,
            "driver": self.driver,
            "source": self.source,
        }

    @property
    def target_id(self) -> str | None:
        """The target with its known features, as ROCm writes a target ID: "gfx90a:sramecc+", "gfx1100"."""
        return None if self.target is None else target_id(self.target, self.features)

    @property
    def described(self) -> str:
        """How an answer names it: "AMD gfx1100 (device 0x744c)", "AMD gfx90a:sramecc+ (device 0x740c)", "Intel GPU
        (device 0xe20b, driver xe)"."""
        parts = (self.device_id and f"device {self.device_id}", self.driver and f"driver {self.driver}")
        inside = ", ".join(part for part in parts if part)
        name = f"AMD {self.target_id}" if self.vendor == "amd" else "Intel GPU"
        return f"{name} ({inside})" if inside else name


def read_other_gpus(sysfs: str = "/sys") -> tuple[OtherGpu, ...]:
    """This machine's AMD and Intel GPUs, read from sysfs (none where the directories are not there)."""
    join = os.path.join
    return (*read_amd(join(sysfs, KFD_NODES), join(sysfs, AMDGPU_VERSION)), *read_intel(join(sysfs, DRM_CLASS)))


def read_amd(kfd: str, amdgpu: str) -> tuple[OtherGpu, ...]:
    nodes = sorted((name for name in _listed(kfd) if name.isdigit() and len(name) <= 4), key=int)[:MAX_NODES]
    found: list[OtherGpu] = []
    for node in nodes:
        properties = _properties(_read(os.path.join(kfd, node, "properties")))
        target = gfx_target(properties.get("gfx_target_version", 0))
        if target is None or properties.get("vendor_id", AMD_VENDOR_ID) != AMD_VENDOR_ID:
            continue
        device = properties.get("device_id")
        found.append(
            OtherGpu(
                vendor="amd",
                index=len(found),
                target=target,
                device_id=None if device is None or not 0 < device <= 0xFFFF else f"0x{device:04x}",
                driver=None,
                source=f"KFD topology node {node}",
                features=sramecc(target, properties.get("capability")),
            )
        )
    if not found:
        return ()
    version = _read(amdgpu).strip()
    driver = f"amdgpu {version}" if re.fullmatch(_MODULE_VERSION, version) else None
    return tuple(replace(gpu, driver=driver) for gpu in found)


def gfx_target(version: int) -> str | None:
    """The gfx target a KFD `gfx_target_version` names, None for 0 (a CPU node) or one no target can be."""
    major, minor, stepping = version // 10000, version // 100 % 100, version % 100
    if not 0 < major < 100 or minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"


def sramecc(target: str, capability: int | None) -> tuple[str, ...]:
    """The sramecc feature of a node, as the ROCm runtime names it by default: none for a processor without it or
    where the node states no capability, else "sramecc+" or "sramecc-" by the node's capability bit."""
    if target not in SRAMECC_TARGETS or capability is None:
        return ()
    on = target in ALWAYS_SRAMECC or bool(capability & SRAM_EDC_SUPPORTED)
    return ("sramecc+" if on else "sramecc-",)


def read_intel(drm: str) -> tuple[OtherGpu, ...]:
    cards = sorted((name for name in _listed(drm) if re.fullmatch(_CARD, name)), key=lambda name: int(name[4:]))
    found: list[OtherGpu] = []
    for card in cards[:MAX_NODES]:
        device = os.path.join(drm, card, "device")
        if _read(os.path.join(device, "vendor")).strip() != INTEL_VENDOR:
            continue
        if not _read(os.path.join(device, "class")).strip().startswith("0x03"):
            continue
        device_id = _read(os.path.join(device, "device")).strip()
        try:
            driver = os.path.basename(os.readlink(os.path.join(device, "driver")))
        except OSError:
            driver = ""
        found.append(
            OtherGpu(
                vendor="intel",
                index=len(found),
                target=None,
                device_id=device_id if re.fullmatch(PCI_ID, device_id) else None,
                driver=driver if re.fullmatch(_DRIVER, driver) else None,
                source=f"DRM {card}",
            )
        )
    return tuple(found)


def stated_other_gpu(text: str, index: int, given: str) -> OtherGpu | None:
    """A GPU of another vendor stated with --gpu (gfx1100, gfx90a, a target ID such as gfx90a:sramecc+:xnack-; xpu
    or xpu:0xe20b), None for any other text (a compute capability); a text that starts as one but is none is bad
    input naming `given`."""
    value = text.strip().lower()
    if value.startswith("gfx"):
        target, features = target_id_parts(value, given)
        return OtherGpu(
            vendor="amd", index=index, target=target, device_id=None, driver=None, source=given, features=features
        )
    if value.startswith("xpu"):
        matched = re.fullmatch(STATED_XPU, value)
        if matched is None:
            raise BadInput(f"{given} {text.strip()[:40]!r}: write an Intel GPU as xpu, or xpu:0xe20b with its PCI id")
        return OtherGpu(vendor="intel", index=index, target=None, device_id=matched[1], driver=None, source=given)
    return None


def target_id(target: str, features: Sequence[str]) -> str:
    """A target ID as ROCm and LLVM write it: the target, then each feature, joined by ':'."""
    return ":".join((target, *features))


def target_id_parts(value: str, given: str) -> tuple[str, tuple[str, ...]]:
    """A target ID's target and features ("gfx90a:sramecc+" -> gfx90a, (sramecc+,)); BadInput naming `given` where it
    is none, or names a feature its processor lacks (ROCm's ISA table, as STATED_FEATURES holds it)."""
    matched = re.fullmatch(STATED_TARGET_ID, value)
    if matched is None:
        raise BadInput(
            f"{given} {value[:40]!r}: not a gfx target; write an AMD GPU's as gfx1100 or gfx90a, or as a target ID "
            "such as gfx90a:sramecc+:xnack- (each feature once, sramecc first)"
        )
    target, features = value.partition(":")[0], tuple(matched[4].split(":")[1:])
    for feature in features:
        if target not in STATED_FEATURES[feature[:-1]]:
            raise BadInput(f"{given} {value!r}: {target} has no {feature[:-1]} feature (ROCm's ISA table)")
    return target, features


def _listed(directory: str) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return [entry.name for _, entry in zip(range(4 * MAX_NODES), entries, strict=False)]
    except OSError:
        return []


def _read(path: str) -> str:
    """A sysfs file of at most MAX_READ bytes as ASCII; "" where it cannot be read, is larger, or is no regular file
    (a FIFO under PICKVARIANT_SYSFS is refused before a read could wait on it)."""
    try:
        return read_regular(path, MAX_READ, "sysfs file").decode("ascii", "replace")
    except BadInput:
        return ""


def _properties(text: str) -> dict[str, int]:
    """A KFD `properties` file's lines, "name value" each; a line that is not that is skipped."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.isidentifier() and value.isdigit() and len(value) <= 20:
            found.setdefault(name, int(value))
    return found
