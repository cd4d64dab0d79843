"""Each GPU the probe saw, judged by the one kernel rule (rules/kernels.py): does the build carry SASS that runs
there, or PTX its driver compiles, and did a kernel run. A ROCm build's GPUs are judged by their target ID against its
arch list instead (kernels.code_object_for); an XPU build's Intel GPUs by the kernel that ran on each, since no rule
reads its targets yet."""

from __future__ import annotations

import re
from typing import Any

from pickvariant._base.versions import ComputeCapability
from pickvariant.machine.facts import HostFacts
from pickvariant.rules import kernels
from pickvariant.rules.wording.prebuilt import installed_lacks
from pickvariant.sources.hardware import Hardware

_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)[af]?$")


def arch_capabilities(arch_list: list[str]) -> list[tuple[str, ComputeCapability]]:
    found = []
    for entry in arch_list:
        match = _ARCH.match(entry)
        if match:
            found.append((match.group(1), ComputeCapability(int(match.group(2)), int(match.group(3)))))
    return found


def judge_devices(
    probe: dict[str, Any],
    catalog: Hardware,
    labels: dict[str, str],
    nvml_index: dict[int, int],
    failures: list[str],
    reasons: list[str],
) -> None:
    """Each GPU the probe saw: does the build carry machine code that runs there, and did a kernel run."""
    if probe.get("hip"):
        judge_rocm_devices(probe, labels, failures, reasons)
        return
    built = arch_capabilities(probe.get("arch_list", []))
    cubins = [cap for kind, cap in built if kind == "sm"]
    ptx = [cap for kind, cap in built if kind == "compute"]
    cuda = probe.get("cuda")
    for device in probe.get("devices", []):
        capability = ComputeCapability(*device["capability"])
        label = labels[f"cuda:{device['index']}"]
        # The one kernel rule (rules/kernels.py): SASS first, then PTX through the driver's JIT.
        runnable = [cap for cap in cubins if kernels.sass_runs_on(cap, capability, catalog, cuda) is None]
        found = kernels.coverage(cubins, ptx, capability, catalog, cuda)
        if found is not None and found[0] == "ptx":
            reasons.append(
                f"{label}, {capability}: no SASS runs there; the driver compiles its compute_"
                f"{found[1].major}{found[1].minor} PTX at first start"
            )
            continue
        if not runnable:
            # Worded as detect --source wheels words the torch in an environment, so a ticket reads one sentence.
            lacks = installed_lacks(
                str(probe.get("torch", "?")), nvml_index.get(device["index"], device["index"]), capability
            )
            arch_list = ", ".join(probe["arch_list"]) or "empty"
            failures.append(
                f"{lacks} ({label}): its arch list is {arch_list}, so CUDA says 'no kernel image is available'"
            )
        elif device.get("kernel_ran") is False:
            failures.append(f"{label}: a kernel failed to run: {device.get('error', '')}")
        else:
            reasons.append(f"{label}, {capability}: kernels for {', '.join(str(c) for c in runnable)} run there")


def runtime_said(probe: dict[str, Any]) -> str:
    """The GPU runtime a torch was built with, as the verdict's first line says it."""
    if probe.get("hip"):
        return f"ROCm, HIP {probe['hip']}"
    if probe.get("xpu"):  # torch.version.xpu: the SYCL compiler's version it was built with ("20250101")
        return f"XPU, SYCL compiler {probe['xpu']}"
    return f"CUDA {probe.get('cuda') or 'none'}"


def xpu_labels(probe: dict[str, Any]) -> dict[str, str]:
    """How each XPU device of the probe is named in the verdict: "XPU 0 (Intel(R) Arc(TM) B580 Graphics)"."""
    return {f"xpu:{device['index']}": f"XPU {device['index']} ({device['name']})" for device in _xpus(probe)}


def _xpus(probe: dict[str, Any]) -> list[dict[str, Any]]:
    return list(probe.get("xpu_devices") or ())


def judge_rocm_devices(probe: dict[str, Any], labels: dict[str, str], failures: list[str], reasons: list[str]) -> None:
    """Each GPU a ROCm build's probe saw: does the arch list hold a code object for its target, and did a kernel run."""
    arch_list = probe.get("arch_list", [])
    override = probe.get("hsa_override_gfx_version")
    if override:
        reasons.append(
            f"HSA_OVERRIDE_GFX_VERSION={override} is set: each GPU reports the target it names, not its own, so the "
            "code objects judged below were built for another GPU; AMD does not support running them there, and "
            "results may be wrong on some GPUs (check them)"
        )
    for device in probe.get("devices", []):
        label = labels[f"cuda:{device['index']}"]
        gcn_arch = device.get("gcn_arch") or ""
        entry = kernels.code_object_for(arch_list, gcn_arch) if gcn_arch else None
        ran = device.get("kernel_ran")
        shown = ", ".join(arch_list) or "empty"
        if gcn_arch and entry is None and ran is not True:
            failures.append(
                f"torch {probe.get('torch', '?')} has no code object for {label}, {gcn_arch}: its arch list is "
                f"{shown}, so HIP says 'invalid device function' (ROCm has no PTX-like fallback)"
            )
        elif ran is False:
            failures.append(f"{label}: a kernel failed to run: {device.get('error', '')}")
        elif entry is not None:
            reasons.append(f"{label}, {gcn_arch}: code objects for {entry} run there")
        elif gcn_arch:  # a generic target, say, which these rules do not read: the kernel that ran speaks for it
            reasons.append(f"{label}, {gcn_arch}: a kernel ran, though its arch list ({shown}) names no such target")
        else:
            reasons.append(f"{label}: the GPU reported no target, so only the kernel that ran speaks for it")


def judge_other_gpus(probe: dict[str, Any], facts: HostFacts, failures: list[str], reasons: list[str]) -> None:
    """The AMD and Intel GPUs detection found here (machine/othergpu.py) against the torch the probe ran: a ROCm (or
    XPU) build that cannot use any GPU fails (a PASS from its CPU checks alone would mislead); any other build leaves
    them unused, which is said. An XPU build's devices are judged by the kernel that ran on each."""
    amd = ", ".join(gpu.described for gpu in facts.other_gpus if gpu.vendor == "amd")
    intel = ", ".join(gpu.described for gpu in facts.other_gpus if gpu.vendor == "intel")
    if amd and probe.get("hip") and not probe.get("cuda_available"):
        failures.append(
            f"this machine has {amd} and this torch is a ROCm build (HIP {probe['hip']}), but it cannot use the GPU: "
            "torch.cuda.is_available() is False (the user needs access to /dev/kfd and /dev/dri/renderD*, which ROCm "
            "grants through the render and video groups)"
        )
    elif amd and not probe.get("hip"):
        reasons.append(f"{amd}: unused by this torch, which is not a ROCm build")
    if probe.get("xpu"):
        _judge_xpu(probe, intel, failures, reasons)
    elif intel:
        reasons.append(f"{intel}: unused by this torch, which is not an XPU build")


def _judge_xpu(probe: dict[str, Any], intel: str, failures: list[str], reasons: list[str]) -> None:
    """An XPU build: it can use an Intel GPU detection found, and a kernel ran on each device it sees."""
    runtime = runtime_said(probe)
    if not probe.get("xpu_available"):
        if intel:
            failures.append(
                f"this machine has {intel} and this torch is an XPU build ({runtime}), but it cannot use the GPU: "
                "torch.xpu.is_available() is False (it needs Intel's GPU driver, whose Level Zero runtime SYCL runs on, "
                "and access to /dev/dri/renderD*, which the render group grants)"
            )
        else:
            reasons.append(f"this torch is an XPU build ({runtime}) and no Intel GPU is here: it ran on the CPU alone")
        return
    targets = ", ".join(probe.get("arch_list", [])) or "none listed"
    labels = xpu_labels(probe)
    for device in _xpus(probe):
        label = labels[f"xpu:{device['index']}"]
        if device.get("kernel_ran") is False:
            failures.append(f"{label}: a kernel failed to run: {device.get('error', '')}")
        elif device.get("kernel_ran"):
            reasons.append(
                f"{label}: a kernel ran there (this build's XPU targets: {targets}; no rule reads them yet, so the "
                "kernel that ran speaks for the GPU)"
            )
        else:
            reasons.append(f"{label}: seen; no kernel was run on it (--info)")
