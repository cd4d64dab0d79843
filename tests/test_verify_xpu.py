"""verify on an XPU build of torch (issue 54, part 4): an Intel GPU used by it is judged by the kernel that ran there,
its matmul and convolution checks are named by the XPU device, and an XPU build that cannot use the Intel GPU detection
found fails rather than passing on its CPU checks.

No Intel GPU runs here, so the probe's result is a stand-in written as the probe prints it on an XPU torch, from what
PyTorch reports there: `torch.version.xpu` the SYCL compiler's version ("20250101", as PyTorch's own inductor code
describes it), `torch.version.cuda` and `torch.version.hip` None, `torch.xpu.get_arch_list()` naming AOT targets
(`bmg`, `pvc`), each device's `get_device_properties()` with its name and `driver_version`. The Intel GPU detection
finds is read from the Arc B580 sysfs fixture. The judge, the schema and the report line are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from machines import host
from test_verify import CPU_CHECK, reported

from pickvariant._base.records import replace
from pickvariant._base.schema import SchemaError, load_schema, validate
from pickvariant.machine.othergpu import read_other_gpus
from pickvariant.output import report
from pickvariant.verify.judge import judge
from pickvariant.verify.probe_run import PROBE_RESULT_SCHEMA

SYSFS = Path(__file__).parent / "fixtures" / "sysfs"
ARC = "Intel(R) Arc(TM) B580 Graphics"


def _xpu(*devices: dict, available: bool = True, **fields) -> dict:
    seen = {"torch": "2.12.0+xpu", "cuda": None, "hip": None, "xpu": "20250101", "xpu_available": available}
    return reported(**{**seen, "arch_list": ["bmg", "dg2", "pvc"], "xpu_devices": list(devices), **fields})


def _arc(ran: bool | None = True, **fields) -> dict:
    device = {"index": 0, "name": ARC, "kind": "xpu", "driver": "1.6.32224+14", "pci": None, **fields}
    return device if ran is None else {**device, "kernel_ran": ran}


def _with_arc(catalog):
    (arc,) = read_other_gpus(str(SYSFS / "arc-b580"))
    return replace(host(catalog, "linux-rhel7-haswell"), other_gpus=(arc,))


def _check_on_arc(**fields) -> dict:
    return {"name": "matmul bf16", "device": "xpu:0", "dtype": "bf16", "ok": True, "rel_error": 1e-3, **fields}


def test_an_arc_b580_on_an_xpu_torch_passes_by_the_kernel_that_ran_and_is_not_told_about_cuda(catalog) -> None:
    probe = _xpu(_arc(), checks=[CPU_CHECK, _check_on_arc(tolerance=1e-2, seconds=0.01, span_seconds=0.01)])
    verdict = judge(probe, catalog, _with_arc(catalog), None)
    assert verdict.passed, verdict.reasons
    assert verdict.reasons[0].startswith("torch 2.12.0+xpu (XPU, SYCL compiler 20250101)")
    assert any(
        reason.startswith(f"XPU 0 ({ARC}): a kernel ran there (this build's XPU targets: bmg, dg2, pvc")
        for reason in verdict.reasons
    )
    assert not any("CUDA" in reason or "not checked" in reason or "unused" in reason for reason in verdict.reasons)
    on_arc = next(finding for finding in verdict.findings if finding["device"] == "xpu:0")
    assert on_arc["gpu"] == f"XPU 0 ({ARC})"  # the check's line names the card, as a CUDA GPU's does


def test_an_xpu_torch_that_cannot_use_the_intel_gpu_here_fails_rather_than_passing_on_its_cpu_checks(catalog) -> None:
    """torch.xpu.is_available() False (no Intel GPU driver, or no access to the render node): its CPU checks pass, and
    a PASS would say the install works; it fails, naming the GPU detection found and what XPU needs."""
    verdict = judge(_xpu(available=False), catalog, _with_arc(catalog), None)
    assert not verdict.passed
    assert verdict.reasons[0].startswith(
        "this machine has Intel GPU (device 0xe20b, driver xe) and this torch is an XPU build (XPU, SYCL compiler "
        "20250101), but it cannot use the GPU: torch.xpu.is_available() is False"
    )
    assert "render group" in verdict.reasons[0]


def test_a_kernel_that_failed_on_the_xpu_fails_and_a_failed_check_there_is_named_by_the_card(catalog) -> None:
    broken = _arc(ran=False, error="RuntimeError: UR error")
    verdict = judge(_xpu(broken), catalog, _with_arc(catalog), None)
    assert not verdict.passed
    assert verdict.reasons[0] == f"XPU 0 ({ARC}): a kernel failed to run: RuntimeError: UR error"
    wrong = _check_on_arc(ok=False, rel_error=0.5, tolerance=1e-2)
    verdict = judge(_xpu(_arc(), checks=[CPU_CHECK, wrong]), catalog, _with_arc(catalog), None)
    assert not verdict.passed
    assert verdict.reasons[0].startswith(f"matmul bf16 on XPU 0 ({ARC}): relative error 5.00e-01 above 0.01")


def test_a_cpu_torch_on_a_machine_with_an_intel_gpu_passes_and_says_the_gpu_is_unused(catalog) -> None:
    verdict = judge(reported(), catalog, _with_arc(catalog), None)
    assert verdict.passed
    assert "Intel GPU (device 0xe20b, driver xe): unused by this torch, which is not an XPU build" in verdict.reasons


def test_an_xpu_torch_where_no_intel_gpu_is_says_it_ran_on_the_cpu_alone(catalog) -> None:
    verdict = judge(_xpu(available=False), catalog, host(catalog, "linux-rhel7-haswell"), None)
    assert verdict.passed
    assert "no Intel GPU is here: it ran on the CPU alone" in verdict.reasons[1]


def test_the_probe_schema_takes_xpu_devices_and_checks_and_refuses_another_device_name() -> None:
    schema = load_schema(PROBE_RESULT_SCHEMA)
    validate(_xpu(_arc(), checks=[CPU_CHECK, _check_on_arc()]), schema)
    with pytest.raises(SchemaError):
        validate(_xpu(_arc(), checks=[_check_on_arc(device="npu:0")]), schema)
    with pytest.raises(SchemaError):  # an XPU device says it is one
        validate(_xpu({**_arc(), "kind": "cuda"}), schema)


def test_a_support_report_names_an_xpu_torch_as_one_not_cuda_none() -> None:
    probed = _xpu()
    kept = {key: probed.get(key) for key in report.INSTALLED_TORCH_KEYS}
    line = report._torch_line(kept)
    assert line.startswith("- Installed PyTorch: 2.12.0+xpu, XPU, SYCL compiler 20250101, arch list bmg, dg2, pvc")
    assert "CUDA" not in line


def test_fleet_compares_an_xpu_node_by_its_intel_gpus_bf16_product_not_by_its_cpu(catalog) -> None:
    """A verify line of an XPU node, as `verify --format json` writes it (the probe whole, its checks judged): fleet's
    figure for it is the Intel GPU's, named by the card, as a CUDA node's is its GPU's."""
    from pickvariant.output.verdict import verify_json
    from pickvariant.rules.fleet import figure, verify_document

    cpu_timed = {**CPU_CHECK, "tflops": 0.4, "seconds": 0.1, "span_seconds": 0.1}
    on_arc = _check_on_arc(tolerance=1e-2, tflops=80.0, seconds=0.02, span_seconds=0.02)
    verdict = judge(_xpu(_arc(), checks=[cpu_timed, on_arc]), catalog, _with_arc(catalog), None)
    labelled = {**verify_json(verdict), "label": "arc01", "package": None, "branch": None}  # as a wheel node has them
    line, problem = verify_document(json.dumps(labelled))
    assert problem is None and line is not None
    assert figure(line) == (ARC, 80.0)
