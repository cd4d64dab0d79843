"""verify and report against a real CPU PyTorch in this interpreter (`pip install torch==2.13.0`)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
import time

import pytest
from typer.testing import CliRunner

from conftest import cpuinfo_path, require
from machines import host
from pickvariant.cli import app
from pickvariant.verify import judge, run_probe

runner = CliRunner()


@pytest.fixture(scope="module")
def probe():
    require(importlib.util.find_spec("torch") is not None, "torch is not installed (pip install torch==2.13.0)")
    result, problem = run_probe([sys.executable], quick=True)
    assert result is not None, problem
    return result


def test_quick_verify_passes_on_real_cpu_torch_within_20_s(probe) -> None:
    start = time.monotonic()
    result = runner.invoke(app, ["verify", "--python", sys.executable, "--quick", "--format", "json"])
    elapsed = time.monotonic() - start
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["passed"] is True
    names = {c["name"] for c in data["checks"]}
    assert {"matmul fp32", "matmul bf16", "conv2d fp32"} <= names
    assert all(c["rel_error"] < c["tolerance"] for c in data["checks"] if c.get("tolerance"))
    assert elapsed < 20


def test_probe_reports_what_torch_says(probe) -> None:
    import torch

    assert probe["torch"] == torch.__version__
    assert probe["cpu_capability"] == torch.backends.cpu.get_cpu_capability()


def reported(**fields) -> dict:
    """What a probe would print, stated in full: judging must not depend on the CPU the tests run on
    (this torch dispatches at AVX2 on a CI machine without AVX-512, at AVX512 elsewhere)."""
    base = {"python": "3.13.1", "executable": "/nix/store/python3", "torch": "2.10.0", "cuda": None, "cpu_capability": "AVX2",
            "arch_list": [], "cuda_available": False, "devices": [], "checks": []}
    return base | fields


def test_a_cuda_less_torch_fails_on_a_machine_with_gpus(catalog) -> None:
    verdict = judge(reported(), catalog, host(catalog, "linux-rhel7-haswell", gpus=("9.0",)), None)
    assert not verdict.passed and "cannot use CUDA" in verdict.reasons[0]


def test_gpus_hidden_by_cuda_visible_devices_are_named_as_not_checked(catalog) -> None:
    seen = reported(cuda="13.0", cuda_available=True, arch_list=["sm_90"], cpu_capability="AVX512",
                    devices=[{"index": 0, "name": "NVIDIA H200", "capability": [9, 0], "kernel_ran": True}])
    facts = dataclasses.replace(host(catalog, "linux-unknown-sapphirerapids", gpus=("9.0", "9.0")), cuda_visible_devices="1")
    verdict = judge(seen, catalog, facts, None)
    assert verdict.passed and any("saw 1 of 2 GPUs; the others were not checked" in reason for reason in verdict.reasons)
    hidden = judge(dict(seen, cuda_available=False, devices=[]), catalog, dataclasses.replace(facts, cuda_visible_devices="-1"), None)
    assert not hidden.passed and "hides all 2 GPU(s)" in hidden.reasons[0]


def test_the_judgement_does_not_depend_on_the_cpu_the_tests_run_on(catalog) -> None:
    facts = host(catalog, "linux-unknown-sapphirerapids")
    assert judge(reported(cpu_capability="AVX512"), catalog, facts, None).passed
    assert not judge(reported(cpu_capability="AVX2"), catalog, facts, None).passed


def test_a_gpu_without_a_kernel_image_fails(catalog) -> None:
    fake = reported(cuda="13.0", cuda_available=True, arch_list=["sm_80", "sm_86"],
                    devices=[{"index": 0, "name": "NVIDIA H200", "capability": [9, 0], "kernel_ran": False}])
    verdict = judge(fake, catalog, host(catalog, "linux-rhel7-haswell", gpus=("9.0",)), None)
    assert not verdict.passed and "no kernel image" in verdict.reasons[0]


def test_tegra_gets_no_desktop_kernels_in_verify_either(catalog) -> None:
    fake = reported(cuda="13.0", cuda_available=True, arch_list=["sm_80", "sm_86"], cpu_capability="DEFAULT",
                    devices=[{"index": 0, "name": "Orin", "capability": [8, 7], "kernel_ran": True}])
    verdict = judge(fake, catalog, host(catalog, "linux-amazon-neoverse_n1", gpus=("8.7",)), None)
    assert not verdict.passed and "no kernel image" in verdict.reasons[0]


def test_cpu_dispatch_below_the_variants_level_fails(catalog) -> None:
    fake = reported(cpu_capability="AVX2")
    verdict = judge(fake, catalog, host(catalog, "linux-unknown-sapphirerapids"), catalog.variant("pytorch-python313-cpu-avx512"))
    assert not verdict.passed and "AVX512" in verdict.reasons[0]


def test_report_is_one_block_without_host_or_user_names(probe) -> None:
    import socket

    result = runner.invoke(app, ["report", "--python", sys.executable])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Installed PyTorch: " + probe["torch"] in text and "Recommendation:" in text
    assert "Mismatches" in text.split("Recommendation:")[0]  # torch 2.13 is not the recommended 2.10: flagged first
    assert socket.gethostname() not in text
    user = os.environ.get("USER", "")
    assert not (len(user) > 2 and user in text)
    stated = str(cpuinfo_path("linux-rhel7-haswell"))
    sourced = runner.invoke(app, ["report", "--python", sys.executable], env={"PICKVARIANT_CPUINFO": stated, "PICKVARIANT_GPU": "none"})
    # A stale PICKVARIANT_CPUINFO must not read as detection.
    assert "(source: PICKVARIANT_CPUINFO=" in sourced.stdout and "linux-rhel7-haswell)" in sourced.stdout  # home paths are written ~
    assert "(source: PICKVARIANT_GPU=none)" in sourced.stdout
    data = json.loads(runner.invoke(app, ["report", "--python", sys.executable, "--format", "json"]).stdout)
    assert data["installed_torch"]["torch"] == probe["torch"] and data["mismatches"]


def test_verify_package_fails_a_torch_that_is_not_the_variants_naming_each_field(catalog) -> None:
    variant = catalog.variant("pytorch-python313-cuda13_0-sm90-avx2")
    cpu_wheel = reported(torch="2.13.0+cpu", cuda=None, arch_list=[])
    verdict = judge(cpu_wheel, catalog, host(catalog, "linux-rhel7-haswell"), variant)
    assert not verdict.passed
    failures = [reason for reason in verdict.reasons if reason.startswith(f"this torch is not {variant.package}")]
    assert len(failures) == 3
    assert "torch 2.13.0+cpu, the variant ships 2.10.0" in failures[0]
    assert "CUDA none, the variant is built with 13.0" in failures[1]
    assert "no sm_90 kernels" in failures[2]


def test_verify_package_passes_the_variants_own_build(catalog) -> None:
    variant = catalog.variant("pytorch-python313-cuda13_0-sm90-avx2")
    own = reported(torch="2.10.0", cuda="13.0", arch_list=["sm_90"])
    verdict = judge(own, catalog, host(catalog, "linux-rhel7-haswell"), variant)
    assert verdict.passed, verdict.reasons
    assert any("are those of pytorch-python313-cuda13_0-sm90-avx2" in reason for reason in verdict.reasons)
    cpu_variant = catalog.variant("pytorch-python313-cpu-avx2")
    assert not judge(own, catalog, host(catalog, "linux-rhel7-haswell"), cpu_variant).passed  # a CUDA build is not the CPU-only one


def test_verify_package_with_the_real_cpu_torch_fails_on_the_torch_version(probe) -> None:
    result = runner.invoke(app, ["verify", "--python", sys.executable, "--quick", "--package", "pytorch-python313-cuda13_0-sm90-avx2"])
    assert result.exit_code == 1
    assert f"torch {probe['torch']}, the variant ships 2.10.0" in result.stdout
