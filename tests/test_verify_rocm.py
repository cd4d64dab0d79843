"""verify on a ROCm build of torch (issue 54, part 4): each AMD GPU judged by its target ID against the build's arch
list, by the same judge as a CUDA build's GPUs, and never told CUDA's story.

No ROCm GPU runs here, so the probe's result is a stand-in written as the probe prints it on a ROCm torch, from what
PyTorch reports there: `torch.version.hip` set and `torch.version.cuda` None, `torch.cuda.get_arch_list()` naming gfx
targets, each device's `gcnArchName` a target ID ("gfx942:sramecc+:xnack-") and its major and minor as HIP gives them.
The arch list is the one PyTorch's manywheel build script sets for its ROCm 7 images (pytorch/pytorch,
.ci/docker/manywheel/build.sh, `PYTORCH_ROCM_ARCH`, with gfx900 and gfx906 added for the legacy images). Which
features must match is LLVM's rule (AMDGPUUsage, "Target ID": a feature a code object names must be the process's; one
it leaves unnamed loads either way). The judge is the real one.
"""

from __future__ import annotations

from pathlib import Path

from machines import host
from test_verify import reported

from pickvariant._base.records import replace
from pickvariant.machine.othergpu import read_other_gpus
from pickvariant.output import report
from pickvariant.verify.judge import judge

SYSFS = Path(__file__).parent / "fixtures" / "sysfs"

ROCM7_ARCHES = [
    "gfx900",
    "gfx906",
    "gfx908",
    "gfx90a",
    "gfx942",
    "gfx950",
    "gfx1030",
    "gfx1100",
    "gfx1101",
    "gfx1102",
    "gfx1103",
    "gfx1200",
    "gfx1201",
    "gfx1150",
    "gfx1151",
]


def _rocm(*devices: dict, arch_list: list[str] = ROCM7_ARCHES, **fields) -> dict:
    seen = {"torch": "2.12.0+rocm7.1", "cuda": None, "hip": "7.1.52802-26aae437f6", "cuda_available": True}
    return reported(**{**seen, "arch_list": arch_list, "devices": list(devices), **fields})


def _gpu(gcn_arch: str, name: str, capability: list[int], ran: bool = True, **fields) -> dict:
    return {"index": 0, "name": name, "capability": capability, "gcn_arch": gcn_arch, "kernel_ran": ran, **fields}


def test_an_mi300x_runs_the_code_objects_built_for_its_target_and_is_not_told_about_cuda(catalog) -> None:
    mi300x = _gpu("gfx942:sramecc+:xnack-", "AMD Instinct MI300X", [9, 4])
    verdict = judge(_rocm(mi300x), catalog, host(catalog, "linux-rhel7-haswell"), None)
    assert verdict.passed, verdict.reasons
    assert verdict.reasons[0].startswith("torch 2.12.0+rocm7.1 (ROCm, HIP 7.1.52802-26aae437f6)")
    assert "cuda:0 (AMD Instinct MI300X), gfx942:sramecc+:xnack-: code objects for gfx942 run there" in verdict.reasons
    assert not any("CUDA" in reason or "no kernel image" in reason for reason in verdict.reasons)


def test_an_rx_5700_xt_outside_the_list_fails_with_what_hip_says(catalog) -> None:
    """gfx1010 is in no list PyTorch builds its ROCm 7 wheels for: 'invalid device function', not a CUDA sentence."""
    assert "gfx1010" not in ROCM7_ARCHES
    navi10 = _gpu(
        "gfx1010:xnack-", "AMD Radeon RX 5700 XT", [10, 1], ran=False, error="HIP error: invalid device function"
    )
    verdict = judge(_rocm(navi10), catalog, host(catalog, "linux-rhel7-haswell"), None)
    assert not verdict.passed
    assert verdict.reasons[0].startswith(
        "torch 2.12.0+rocm7.1 has no code object for cuda:0 (AMD Radeon RX 5700 XT), gfx1010:xnack-: its arch list is "
        "gfx900, gfx906"
    )
    assert "HIP says 'invalid device function'" in verdict.reasons[0]


def test_a_feature_the_code_object_names_must_be_the_gpus_and_one_it_leaves_unnamed_runs_either_way(catalog) -> None:
    machine = host(catalog, "linux-rhel7-haswell")
    ecc_on = _gpu("gfx90a:sramecc+:xnack-", "AMD Instinct MI250X", [9, 0])
    ecc_off = _gpu("gfx90a:sramecc-:xnack-", "AMD Instinct MI250X", [9, 0], ran=False, error="invalid device function")
    assert judge(_rocm(ecc_on, arch_list=["gfx90a:sramecc+"]), catalog, machine, None).passed
    refused = judge(_rocm(ecc_off, arch_list=["gfx90a:sramecc+"]), catalog, machine, None)
    assert not refused.passed and "has no code object for" in refused.reasons[0]
    unnamed = _gpu("gfx90a:sramecc-:xnack-", "AMD Instinct MI250X", [9, 0])
    assert judge(_rocm(unnamed, arch_list=["gfx90a"]), catalog, machine, None).passed
    # A code object that needs XNACK on, on a GPU whose target ID does not say XNACK is on: not known to load there.
    unstated = _gpu("gfx90a", "AMD Instinct MI250X", [9, 0], ran=False, error="invalid device function")
    needs_xnack = judge(_rocm(unstated, arch_list=["gfx90a:xnack+"]), catalog, machine, None)
    assert not needs_xnack.passed and "has no code object for" in needs_xnack.reasons[0]


def test_an_override_of_the_reported_target_is_said_and_a_kernel_that_failed_still_fails(catalog) -> None:
    """HSA_OVERRIDE_GFX_VERSION makes a gfx1103 APU report gfx1100: its code objects load, built for another GPU.
    The verdict says so rather than passing it silently; and a kernel that failed fails whatever the list says."""
    machine = host(catalog, "linux-rhel7-haswell")
    apu = _gpu("gfx1100", "AMD Radeon 780M", [11, 0])
    said = judge(_rocm(apu, hsa_override_gfx_version="11.0.0"), catalog, machine, None)
    assert said.passed
    assert any(
        r.startswith("HSA_OVERRIDE_GFX_VERSION=11.0.0 is set: each GPU reports the target") for r in said.reasons
    )
    broken = _gpu("gfx1100", "AMD Radeon RX 7900 XTX", [11, 0], ran=False, error="HIP error: out of memory")
    failed = judge(_rocm(broken), catalog, machine, None)
    assert not failed.passed and "a kernel failed to run: HIP error: out of memory" in failed.reasons[0]


def test_a_list_given_as_one_semicolon_joined_entry_is_read_as_the_targets_it_names(catalog) -> None:
    mi300x = _gpu("gfx942:sramecc+:xnack-", "AMD Instinct MI300X", [9, 4])
    verdict = judge(
        _rocm(mi300x, arch_list=[";".join(ROCM7_ARCHES)]), catalog, host(catalog, "linux-rhel7-haswell"), None
    )
    assert verdict.passed, verdict.reasons


def _with_radeon(catalog):
    """This stand-in host with the real Radeon RX 7900 XTX node read from its sysfs capture (tests/fixtures/sysfs)."""
    (radeon,) = read_other_gpus(str(SYSFS / "radeon-rx7900xtx"))
    return replace(host(catalog, "linux-rhel7-haswell"), other_gpus=(radeon,))


def test_a_rocm_torch_that_cannot_use_the_amd_gpu_here_fails_rather_than_passing_on_its_cpu_checks(catalog) -> None:
    """torch.cuda.is_available() False on a ROCm build (the user without access to /dev/kfd, commonly): its CPU
    checks pass, and a PASS would say the install works; it fails, naming the GPU and what ROCm needs."""
    unseen = _rocm(cuda_available=False)
    verdict = judge(unseen, catalog, _with_radeon(catalog), None)
    assert not verdict.passed
    assert verdict.reasons[0].startswith(
        "this machine has AMD gfx1100 (device 0x744c) and this torch is a ROCm build (HIP 7.1.52802-26aae437f6), but "
        "it cannot use the GPU"
    )
    assert "/dev/kfd" in verdict.reasons[0]


def test_a_cpu_torch_on_a_machine_with_an_amd_gpu_passes_and_says_the_gpu_is_unused(catalog) -> None:
    verdict = judge(reported(), catalog, _with_radeon(catalog), None)
    assert verdict.passed
    assert "AMD gfx1100 (device 0x744c): unused by this torch, which is not a ROCm build" in verdict.reasons


def test_a_support_report_names_a_rocm_torchs_hip_version_not_cuda_none() -> None:
    """What `report` shows of the installed torch (its Markdown line, from the probe's fields as `report` keeps them)."""
    probed = _rocm()
    kept = {key: probed.get(key) for key in report.INSTALLED_TORCH_KEYS}
    line = report._torch_line(kept)
    assert line.startswith("- Installed PyTorch: 2.12.0+rocm7.1, ROCm, HIP 7.1.52802-26aae437f6, arch list gfx900")
    assert "CUDA" not in line
