"""The one kernel rule (pickvariant/rules/kernels.py), with expectations taken from the facts, not from the code.

- CUDA binary compatibility (facts/hardware-facts.md, facts/wheels.md caveat 8): SASS for X.y runs on X.z, z >= y,
  never on another major, never across a Tegra (integrated) GPU and a discrete one;
- CUDA 13.2's SBSA-on-Jetson unification (facts/wheels.md §2.15, torch 2.15.0's own
  DEVICE_REQUIREMENT_POST_JETSON_SBSA_UNIFICATION): with a CUDA >= 13.2 build, sm_80 and sm_86 code runs on 8.7
  (Orin) and sm_70 on 7.2 (Xavier); before 13.2 they do not;
- PTX is compiled by the driver for any GPU of a capability at least its own.
verify's judge asks the same rule of a probed torch's arch list.
"""

from __future__ import annotations

import pytest
from conftest import REPO

from pickvariant._base.versions import ComputeCapability as CC
from pickvariant.rules import kernels
from pickvariant.sources.flox.recipes.load import load_catalog

CATALOG = load_catalog(REPO / "catalog.json")


@pytest.mark.parametrize(
    ("sass", "ptx", "gpu", "cuda", "expected"),
    [
        ([CC(8, 0)], [], CC(8, 6), "12.6", ("sass", CC(8, 0))),  # same major, higher minor
        ([CC(8, 6)], [], CC(8, 0), "12.6", None),  # a newer minor never runs on an older one
        ([CC(9, 0)], [], CC(10, 0), "12.8", None),  # another major never
        ([CC(8, 0), CC(8, 6)], [], CC(8, 9), "12.8", ("sass", CC(8, 6))),  # the highest that runs is named
        ([CC(7, 5)], [CC(8, 0)], CC(8, 6), "12.6", ("ptx", CC(8, 0))),  # no SASS: PTX through the JIT
        ([CC(7, 5)], [CC(9, 0)], CC(8, 6), "12.6", None),  # PTX of a higher capability does not
        ([], [CC(9, 0)], CC(9, 0), "12.6", ("ptx", CC(9, 0))),  # PTX of exactly the GPU's capability does
        ([CC(8, 0)], [], CC(8, 7), "13.0", None),  # Orin is a Tegra GPU: dGPU SASS before 13.2 does not run
        ([CC(8, 0)], [], CC(8, 7), "13.2", ("sass", CC(8, 0))),  # CUDA 13.2 unification
        ([CC(8, 6)], [], CC(8, 7), "13.2", ("sass", CC(8, 6))),
        ([CC(7, 0)], [], CC(7, 2), "13.2", ("sass", CC(7, 0))),  # Xavier
        ([CC(7, 0)], [], CC(7, 2), "12.6", None),
        ([CC(9, 0)], [], CC(8, 7), "13.2", None),  # the unification stays within a major
        ([CC(8, 9)], [], CC(8, 7), "13.2", None),  # and only for the SASS torch's table names
        ([CC(8, 7)], [], CC(8, 7), "12.6", ("sass", CC(8, 7))),  # Tegra code on its own GPU
    ],
)
def test_the_one_kernel_rule_answers_as_the_facts_say(sass, ptx, gpu, cuda, expected) -> None:
    assert kernels.coverage(sass, ptx, gpu, CATALOG, cuda) == expected


def test_verify_judges_a_ptx_only_torch_by_the_same_rule() -> None:
    """A probed torch whose arch list holds only compute_80 on an 8.6 GPU, or on an 8.0 GPU (PTX of exactly its
    capability), runs (through the JIT), said; on a 7.5 GPU it has no kernels, as detect says of it."""
    from pickvariant.verify.devices import judge_devices

    for capability, runs in (((8, 6), True), ((8, 0), True), ((7, 5), False)):
        probe = {
            "torch": "2.14.1+cu126",
            "cuda": "12.6",
            "arch_list": ["compute_80"],
            "devices": [{"index": 0, "capability": list(capability), "kernel_ran": True}],
        }
        failures: list[str] = []
        reasons: list[str] = []
        judge_devices(probe, CATALOG, {"cuda:0": "GPU 0 (test)"}, {}, failures, reasons)
        if runs:
            assert failures == [] and "compiles its compute_80 PTX at first start" in reasons[0]
        else:
            assert failures and "no kernel image is available" in failures[0]


def test_an_orin_on_a_cuda_13_2_driver_gets_an_aarch64_cuda_13_2_wheel_and_is_told_why() -> None:
    """facts/wheels.md §2.15: the aarch64 cu132 wheel's sm_80 SASS serves an Orin (8.7) whose JetPack driver reports
    CUDA 13.2; on a CUDA 13.0 driver no wheel runs there."""
    import json

    from conftest import cli_runner, cpuinfo_path

    from pickvariant.cli.main import app

    runner = cli_runner()
    machine = ["--gpu", "8.7", "--cpuinfo", str(cpuinfo_path("linux-rhel9-neoverse_v2"))]
    found = runner.invoke(app, ["detect", "--source", "wheels", "--format", "json", *machine, "--driver-cuda", "13.2"])
    assert found.exit_code == 0, found.output
    answer = json.loads(found.stdout)
    assert answer["recommendation"]["variant"] == "cu132" and answer["recommendation"]["platform"] == "linux-aarch64"
    assert any("DEVICE_REQUIREMENT_POST_JETSON_SBSA_UNIFICATION" in reason for reason in answer["reasons"])
    older = runner.invoke(app, ["detect", "--source", "wheels", *machine, "--driver-cuda", "13.0"])
    assert older.exit_code == 3


def _catalog_with_a_cuda_13_2_line():
    """The shipped catalog with a CUDA 13.2 line on one branch and its aarch64 sm_80 variant: the build repository has
    no 13.2 line yet (and pickvariant's hardware facts no 13.2 release, so the catalog is restated in memory). The
    line's driver floor is 13.x's, as the catalog's 13.1 line has it (facts/wheels.md caveat 12)."""
    from pickvariant._base.records import replace

    branch = next(b for b in CATALOG.branches if b.name == "pytorch-2.10-python313")
    line = replace(next(line for line in branch.cuda_lines if line.cuda == "13.1"), cuda="13.2")
    shipped = next(v for v in branch.variants if v.platform == "aarch64-linux" and v.gpu_arch == "sm80")
    package = shipped.package.replace(f"cuda{shipped.cuda.replace('.', '_')}", "cuda13_2")
    variant = replace(shipped, cuda="13.2", package=package)
    restated = replace(branch, cuda_lines=(*branch.cuda_lines, line), variants=(*branch.variants, variant))
    releases = dict(CATALOG.cuda_releases, **{"13.2": CATALOG.cuda_releases["13.1"]})
    branches = tuple(restated if b is branch else b for b in CATALOG.branches)
    return replace(CATALOG, branches=branches, cuda_releases=releases), package


@pytest.mark.parametrize(("driver_cuda", "runs"), [("13.2", True), ("13.1", False)])
def test_a_recipe_variant_is_judged_by_the_same_kernel_rule_as_a_wheel(driver_cuda, runs) -> None:
    """The recipes' stages ask the one rule with each variant's CUDA line: an Orin (8.7) whose JetPack driver runs
    CUDA 13.2 gets the aarch64 sm_80 recipe of CUDA 13.2 (the unification, facts/wheels.md §2.15), as it gets the
    cu132 wheel; on a CUDA 13.1 driver that recipe cannot run, and no sm_80 recipe of an older line serves it."""
    from machines import host

    from pickvariant.rules.decide import decide

    catalog, package = _catalog_with_a_cuda_13_2_line()
    orin = host(catalog, "linux-rhel9-neoverse_v2", gpus=("8.7",), driver_cuda=driver_cuda)
    decision = decide(orin, catalog)
    chosen = decision.build.package if decision.build is not None else None
    assert (chosen == package) is runs, decision.reasons
    assert chosen is None or runs
    assert (kernels.coverage([CC(8, 0)], [], CC(8, 7), CATALOG, driver_cuda) is not None) is runs
