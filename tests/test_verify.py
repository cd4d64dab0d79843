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

from conftest import require
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


def test_a_cuda_less_torch_fails_on_a_machine_with_gpus(probe, catalog) -> None:
    cpu_only = dict(probe, cuda=None, cuda_available=False, arch_list=[], devices=[], checks=[])  # as CI's CPU torch reports
    verdict = judge(cpu_only, catalog, host(catalog, "linux-rhel7-haswell", gpus=("9.0",)), None)
    assert not verdict.passed and "cannot use CUDA" in verdict.reasons[0]


def test_gpus_hidden_by_cuda_visible_devices_are_named_as_not_checked(probe, catalog) -> None:
    seen = dict(probe, cuda="13.0", cuda_available=True, arch_list=["sm_90"], checks=[],
                devices=[{"index": 0, "name": "NVIDIA H200", "capability": [9, 0], "kernel_ran": True}])
    facts = dataclasses.replace(host(catalog, "linux-unknown-sapphirerapids", gpus=("9.0", "9.0")), cuda_visible_devices="1")
    verdict = judge(seen, catalog, facts, None)
    assert verdict.passed and any("saw 1 of 2 GPUs; the others were not checked" in reason for reason in verdict.reasons)
    hidden = judge(dict(seen, cuda_available=False, devices=[]), catalog, dataclasses.replace(facts, cuda_visible_devices="-1"), None)
    assert not hidden.passed and "hides all 2 GPU(s)" in hidden.reasons[0]


def test_a_gpu_without_a_kernel_image_fails(probe, catalog) -> None:
    fake = dict(probe, cuda="13.0", cuda_available=True, arch_list=["sm_80", "sm_86"],
                devices=[{"index": 0, "name": "NVIDIA H200", "capability": [9, 0], "kernel_ran": False}])
    verdict = judge(fake, catalog, host(catalog, "linux-rhel7-haswell", gpus=("9.0",)), None)
    assert not verdict.passed and "no kernel image" in verdict.reasons[0]


def test_tegra_gets_no_desktop_kernels_in_verify_either(probe, catalog) -> None:
    fake = dict(probe, cuda="13.0", cuda_available=True, arch_list=["sm_80", "sm_86"],
                devices=[{"index": 0, "name": "Orin", "capability": [8, 7], "kernel_ran": True}])
    assert not judge(fake, catalog, host(catalog, "linux-amazon-neoverse_n1", gpus=("8.7",)), None).passed


def test_cpu_dispatch_below_the_variants_level_fails(probe, catalog) -> None:
    fake = dict(probe, cpu_capability="AVX2")
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
    data = json.loads(runner.invoke(app, ["report", "--python", sys.executable, "--format", "json"]).stdout)
    assert data["installed_torch"]["torch"] == probe["torch"] and data["mismatches"]
