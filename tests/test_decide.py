from __future__ import annotations

import json

import pytest
from conftest import DATA, cpuinfo_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from machines import host

from pickvariant._base.errors import BadInput
from pickvariant._base.records import replace
from pickvariant._base.request import Request
from pickvariant._base.versions import cpython_tag, parse_compute_capability, version_key
from pickvariant.machine.facts import HostFacts
from pickvariant.rules import ranking, stages, wording
from pickvariant.rules.compat import build_of_variant, kernels_run_on, refusals, why_not
from pickvariant.rules.decide import decide
from pickvariant.rules.decision import Decision
from pickvariant.rules.pins import cuda_pinned_out
from pickvariant.sources.build import Catalog

FACTS = json.loads((DATA / "hardware-facts.json").read_text())


def package(decision) -> str | None:
    return decision.build.package if decision.build else None


# --- real dumps -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dump, gpus, workload, expected",
    [
        ("linux-rhel7-haswell", ("9.0",), "general", "pytorch-python313-cuda13_1-sm90-avx2"),
        (
            "linux-rhel7-skylake_avx512",
            ("9.0",),
            "int8",
            "pytorch-python313-cuda13_1-sm90-avx512",
        ),  # no VNNI on Skylake-SP
        ("linux-centos7-cascadelake", ("8.0",), "int8", "pytorch-python313-cuda13_1-sm80-avx512vnni"),
        ("linux-centos7-cascadelake", ("8.0",), "bf16", "pytorch-python313-cuda13_1-sm80-avx512"),
        ("linux-unknown-sapphirerapids", ("9.0",), "bf16", "pytorch-python313-cuda13_1-sm90-avx512bf16"),
        ("linux-unknown-sapphirerapids", ("9.0",), "general", "pytorch-python313-cuda13_1-sm90-avx512"),
        ("linux-rocky8.5-zen4", ("8.9",), "general", "pytorch-python313-cuda13_1-sm89-avx512"),
        ("linux-rhel9-neoverse_v2", ("9.0",), "general", "pytorch-python313-cuda13_1-sm90-armv9"),
        ("linux-amazon-neoverse_n1", ("7.5",), "general", "pytorch-python313-cuda13_1-sm75-armv8_2"),
        ("linux-rhel9-neoverse_v2", ("12.1",), "general", "pytorch-python313-cuda13_1-sm121-armv9"),
        ("linux-rhel9-neoverse_v2", ("11.0",), "general", "pytorch-python313-cuda13_1-sm110-armv9"),
        ("linux-rhel7-haswell", (), "general", "pytorch-python313-cpu-avx2"),
        ("linux-rhel7-ivybridge", (), "general", "pytorch-python313-cpu-avx"),
        ("linux-rhel7-ivybridge", ("6.1",), "general", "pytorch-python313-cuda12_9-sm61-avx"),
        (
            "linux-kvm-xeon-amx-16core",
            ("9.0",),
            "bf16",
            "pytorch-python313-cuda13_1-sm90-avx512bf16",
        ),  # the H200 device host
        ("linux-kvm-xeon-2core", (), "int8", "pytorch-python313-cpu-avx512vnni"),
        ("linux-kvm-epyc-2core", (), "general", "pytorch-python313-cpu-avx2"),  # Zen 3: no AVX-512
        ("linux-kvm-epyc-2core", ("8.9",), "bf16", "pytorch-python313-cuda13_1-sm89-avx2"),
    ],
)
def test_real_cpus_get_the_safe_fastest_variant(catalog, dump, gpus, workload, expected) -> None:
    assert package(decide(host(catalog, dump, gpus=gpus), catalog, Request(workload=workload))) == expected


def test_gb10_on_x86_falls_back_to_sm120_and_says_why(catalog) -> None:
    decision = decide(host(catalog, "linux-rocky8.5-zen4", gpus=("12.1",)), catalog)
    assert package(decision) == "pytorch-python313-cuda13_1-sm120-avx512"
    assert any("highest architecture" in reason for reason in decision.reasons)


def test_a_b300_on_a_driver_older_than_its_architecture_is_refused_and_told_the_first_that_drives_it(catalog) -> None:
    decision = decide(host(catalog, "linux-rhel7-haswell", gpus=("10.3",), driver="570.124.06"), catalog)
    assert decision.build is None
    assert (
        "driver 570.124.06 cannot drive GPU 0 (compute capability 10.3): it is older than 580.82.07, the first driver that drives it"
        in decision.reasons
    )
    at_the_floor = decide(host(catalog, "linux-rhel7-haswell", gpus=("10.3",), driver="580.82.07"), catalog)
    assert (
        f"a driver >= 580.82.07 (CUDA {at_the_floor.build.cuda}, by CUDA 13.x minor-version compatibility) "
        f"would allow {at_the_floor.build.label}" in decision.hints
    )


@pytest.mark.parametrize(
    ("capability", "driver", "first", "said"),
    [
        ("12.0", "535.104.05", "570", "the R570 branch"),
        ("12.0", "550.163.01", "570", "the R570 branch"),
        ("10.0", "535.104.05", "570", "the R570 branch"),
        ("10.0", "565.77", "570", "the R570 branch"),
        ("12.1", "575.57.08", "580", "the R580 branch"),
        ("10.3", "575.64.05", "580.82.07", "580.82.07"),
        ("10.3", "580.76.05", "580.82.07", "580.82.07"),
    ],
)
def test_a_gpu_newer_than_the_driver_branch_gets_no_variant(catalog, capability, driver, first, said) -> None:
    decision = decide(host(catalog, "linux-rhel9-neoverse_v2", gpus=(capability,), driver=driver), catalog)
    assert decision.build is None and not decision.candidates
    assert any(
        reason.startswith(f"driver {driver} cannot drive GPU 0") and f"older than {said}," in reason
        for reason in decision.reasons
    )
    assert decide(host(catalog, "linux-rhel9-neoverse_v2", gpus=(capability,), driver=first), catalog).build is not None
    # CUDA 12.8's own driver, 570.86.10, is an R570 driver: not refused for Blackwell.
    if first == "570":
        assert (
            decide(host(catalog, "linux-rhel9-neoverse_v2", gpus=(capability,), driver="570.86.10"), catalog).build
            is not None
        )


@pytest.mark.parametrize("capability", ["6.1", "7.0"])
def test_pascal_and_volta_on_a_branch_after_r580_are_refused_and_sent_back_to_r580(catalog, capability) -> None:
    decision = decide(host(catalog, "linux-rhel7-haswell", gpus=(capability,), driver="590.44.01"), catalog)
    assert decision.build is None
    assert any("newer than R580, the last driver branch that drives it" in reason for reason in decision.reasons)
    assert any(hint.startswith("a driver of branch R580 or older, >= 525.60.13") for hint in decision.hints)
    assert (
        decide(host(catalog, "linux-rhel7-haswell", gpus=(capability,), driver="580.95.05"), catalog).build is not None
    )


def test_a_stated_jetson_driver_number_alone_decides_nothing_and_asks_for_its_cuda_version(catalog) -> None:
    from pickvariant.machine.facts import gather_facts

    thor = Request(cpuinfo=cpuinfo_path("linux-rhel9-neoverse_v2"), gpus=("11.0",), driver="580.00")
    decision = decide(gather_facts(catalog, thor, env={}), catalog)
    assert decision.build is None
    told = " ".join(decision.reasons + decision.hints)
    assert "--driver-cuda" in told and "580.65.06" not in told and "driver >=" not in told
    stated = gather_facts(catalog, thor, env={"PICKVARIANT_DRIVER_CUDA": "13.0"})
    assert stated.sources["driver"] == "--driver PICKVARIANT_DRIVER_CUDA=13.0"
    assert package(decide(stated, catalog)) == "pytorch-python313-cuda13_0-sm110-armv9"


def test_an_orin_on_jetpack_6_is_told_what_its_cuda_version_runs_not_the_desktop_minimums(catalog) -> None:
    decision = decide(
        host(catalog, "linux-rhel9-neoverse_v2", gpus=("8.7",), driver="540.4.0", driver_cuda="12.6"), catalog
    )
    driver_line = next(reason for reason in decision.reasons if reason.startswith("driver 540.4.0"))
    assert "(CUDA 12.6) can run none of the CUDA lines" in driver_line and "Jetson drivers are judged" in driver_line
    assert all("driver >=" not in hint for hint in decision.hints)


def test_sm103_is_not_on_main_so_pinning_torch_2_8_falls_back_to_sm100(catalog) -> None:
    decision = decide(
        host(catalog, "linux-rhel7-haswell", gpus=("10.3",), driver="580.82.07"), catalog, Request(torch="2.8.0")
    )
    assert package(decision) == "pytorch-python313-cuda12_8-sm100-avx2"


def test_pascal_falls_back_to_the_newest_branch_that_still_builds_sm61(catalog) -> None:
    decision = decide(host(catalog, "linux-rhel7-haswell", gpus=("6.1",), driver="580.95.05"), catalog)
    assert (package(decision), decision.build.branch, decision.build.torch) == (
        "pytorch-python313-cuda12_9-sm61-avx2",
        "pytorch-2.10-python313",
        "2.10.0",
    )
    # CUDA 13 cannot build sm61: the newer lines of the same branch have none.
    assert not any(v.gpu_arch == "sm61" and v.cuda.startswith("13") for v in catalog.variants if v.cuda)


def test_driver_too_old_for_every_branch_names_the_version_needed(catalog) -> None:
    decision = decide(host(catalog, "linux-rhel7-haswell", gpus=("9.0",), driver="470.42.01"), catalog)
    assert decision.build is None
    assert any("525.60.13" in hint for hint in decision.hints)


@pytest.mark.parametrize("tegra", ["7.2", "8.7"])
def test_tegra_gpus_never_get_desktop_kernels(catalog, tegra) -> None:
    decision = decide(host(catalog, "linux-amazon-neoverse_n1", gpus=(tegra,)), catalog)
    assert decision.build is None
    assert any("--no-gpu" in hint for hint in decision.hints)


def test_thor_reporting_10_1_under_cuda_12_is_told_to_update_the_driver(catalog) -> None:
    decision = decide(
        host(catalog, "linux-rhel9-neoverse_v2", gpus=("10.1",), driver="575.57.08", driver_cuda="12.9"), catalog
    )
    assert decision.build is None
    assert any(
        "a Jetson driver (JetPack) that supports CUDA 13.0 makes the sm110 variants usable" in hint
        for hint in decision.hints
    )
    assert not any("580.65.06" in hint for hint in decision.hints)


def _thor(catalog, driver: str, cuda: int):
    """A Jetson AGX Thor as NVML reports it under JetPack 7 (driver "580.00"); Grace's Neoverse V2 dump stands in
    for Thor's Neoverse V3AE (both armv9 with SVE2; no real V3AE dump is in the fixtures)."""
    from fakenvml import fake_nvml

    from pickvariant.machine.cpu import read_cpuinfo_dump
    from pickvariant.machine.facts import gather_facts
    from pickvariant.machine.gpu import query_nvml

    nvml = fake_nvml([{"name": "NVIDIA Thor", "cc": (11, 0), "mem": 125772, "mig": None}], driver=driver, cuda=cuda)
    return gather_facts(
        catalog,
        Request(),
        env={},
        detect_cpu_fn=lambda: read_cpuinfo_dump(cpuinfo_path("linux-rhel9-neoverse_v2")),
        read_gpus_fn=lambda: query_nvml(nvml),
    )


def test_a_real_jetson_thor_report_is_judged_by_its_cuda_version_not_its_driver_number(catalog) -> None:
    facts = _thor(catalog, "580.00", 13000)  # below the desktop minimum 580.65.06, yet a CUDA 13.0 driver
    decision = decide(facts, catalog)
    assert package(decision) == "pytorch-python313-cuda13_0-sm110-armv9"
    assert any(
        "CUDA 13.0" in reason and "Jetson drivers are judged by the CUDA version" in reason
        for reason in decision.reasons
    )


def test_a_thor_driver_for_an_older_cuda_gets_the_jetpack_it_needs_named(catalog) -> None:
    decision = decide(_thor(catalog, "540.4.0", 12080), catalog)
    assert decision.build is None
    assert (
        "a Jetson driver (JetPack) that supports CUDA 13.0 would allow pytorch-python313-cuda13_0-sm110-armv9 (pytorch-2.10-python313)"
        in decision.hints
    )


def test_the_driver_upgrade_hint_names_the_variant_the_rules_would_then_choose(catalog) -> None:
    old = host(catalog, "linux-rocky8.5-zen4", gpus=("8.9",), driver="525.60.12")
    decision = decide(old, catalog)
    upgraded = decide(host(catalog, "linux-rocky8.5-zen4", gpus=("8.9",), driver="525.60.13"), catalog)
    assert decision.build is None and upgraded.build is not None and upgraded.build.cpu_isa == "avx512"
    assert (
        f"a driver >= 525.60.13 (CUDA {upgraded.build.cuda}, by CUDA 12.x minor-version compatibility) "
        f"would allow {upgraded.build.label}" in decision.hints
    )
    assert not any("sm80" in hint or "avx2" in hint for hint in decision.hints)


def test_the_driver_upgrade_hint_for_an_armv9_cpu_names_an_armv9_build(catalog) -> None:
    decision = decide(
        host(catalog, "linux-rhel9-neoverse_v2", gpus=("11.0",), driver="570.86.10", driver_cuda="12.8"), catalog
    )
    assert any("would allow pytorch-python313-cuda13_0-sm110-armv9" in hint for hint in decision.hints)
    assert not any("armv8_2" in hint for hint in decision.hints)


def test_a_driver_reason_does_not_blame_the_driver_for_branches_the_pins_removed(catalog) -> None:
    decision = decide(
        host(catalog, "linux-rhel7-haswell", gpus=("9.0",), driver="570.86.10"), catalog, Request(cuda="13")
    )
    assert decision.build is None
    driver_line = next(reason for reason in decision.reasons if reason.startswith("driver 570.86.10"))
    assert "of the catalog" not in driver_line


def test_a_user_who_has_the_driver_is_not_told_to_get_it(catalog) -> None:
    decision = decide(
        host(catalog, "linux-rhel9-neoverse_v2", gpus=("10.1",), driver="580.00", driver_cuda="13.0"), catalog
    )
    assert decision.build is None
    assert not any("a driver >= 580.65.06" in hint or "supports CUDA 13.0" in hint for hint in decision.hints)
    assert any("--gpu 11.0" in hint for hint in decision.hints)


@pytest.mark.parametrize(
    ("pin", "value", "branch", "cuda"),
    [
        ("torch", "2.10", "pytorch-2.10-python313", "13.1"),
        ("cuda", "13", "pytorch-2.10-python313", "13.1"),
        ("torch", "2.9", "pytorch-2.9-python313", "13.0"),
        ("cuda", "12.9.0", "pytorch-2.10-python313", "12.9"),
        ("torch", " 2.8 ", "main", "12.8"),
        ("python", "3.12", "pytorch-2.8-python312", "12.8"),
    ],
)
def test_short_version_pins_match_the_release_they_name(catalog, pin, value, branch, cuda) -> None:
    decision = decide(host(catalog, "linux-rhel7-haswell", gpus=("9.0",)), catalog, Request(**{pin: value}))
    assert decision.build is not None and (decision.build.branch, decision.build.cuda) == (branch, cuda)


@pytest.mark.parametrize("value", ["2.1", "13.1", "1"])
def test_a_pin_is_no_text_prefix(catalog, value) -> None:
    with pytest.raises(BadInput, match="no branch matches --torch"):
        decide(host(catalog, "linux-rhel7-haswell", gpus=("9.0",)), catalog, Request(torch=value, cuda=None))


def test_a_pin_that_is_not_a_version_is_bad_input(catalog) -> None:
    with pytest.raises(BadInput, match="--cuda 'thirteen': not a version"):
        decide(host(catalog, "linux-rhel7-haswell"), catalog, Request(cuda="thirteen"))


def test_mixed_gpus_take_the_architecture_that_runs_on_all(catalog) -> None:
    decision = decide(host(catalog, "linux-rhel7-haswell", gpus=("8.0", "8.9")), catalog)
    assert package(decision) == "pytorch-python313-cuda13_1-sm80-avx2"


def test_conflicting_gpus_exit_with_both_named_and_gpu_index_resolves(catalog) -> None:
    facts = host(catalog, "linux-rhel7-haswell", gpus=("8.0", "9.0"))
    decision = decide(facts, catalog)
    assert decision.build is None
    assert any("conflict" in reason and "GPU 0" in reason and "GPU 1" in reason for reason in decision.reasons)
    assert package(decide(facts, catalog, Request(gpu_index=1))) == "pytorch-python313-cuda13_1-sm90-avx2"


def test_gpu_index_that_does_not_exist_is_bad_input(catalog) -> None:
    with pytest.raises(BadInput, match="--gpu-index 3"):
        decide(host(catalog, "linux-rhel7-haswell", gpus=("9.0",)), catalog, Request(gpu_index=3))


def test_an_avx_only_cpu_with_a_gpu_gets_the_avx_build_of_its_gpu(catalog) -> None:
    # The build repository now builds AVX-only CUDA variants (pytorch-2.9 and 2.10 branches).
    decision = decide(host(catalog, "linux-rhel7-ivybridge", gpus=("8.6",)), catalog)
    assert package(decision) == "pytorch-python313-cuda13_1-sm86-avx"


def test_missing_flags_are_named(catalog) -> None:
    decision = decide(host(catalog, "linux-rhel7-skylake_avx512", gpus=("9.0",)), catalog, Request(workload="int8"))
    why = {wording.choice(r): wording.why(r) for r in decision.rejected}
    assert "avx512_vnni" in why["CPU instruction set avx512vnni"]


@pytest.mark.parametrize("dump", ["linux-centos7-power8le", "darwin-mojave-skylake"])
def test_unsupported_platforms_get_no_variant(catalog, dump) -> None:
    decision = decide(host(catalog, dump), catalog)
    assert decision.build is None
    assert "not supported" in decision.reasons[0]


def test_pins_that_match_no_branch_are_bad_input(catalog) -> None:
    with pytest.raises(BadInput, match=r"2\.7\.0"):
        decide(host(catalog, "linux-rhel7-haswell"), catalog, Request(torch="2.7.0"))


def test_cpu_only_builds_follow_the_pins(catalog) -> None:
    decision = decide(host(catalog, "linux-rhel7-haswell"), catalog, Request(torch="2.9.1"))
    assert (package(decision), decision.build.branch) == ("pytorch-python313-cpu-avx2", "pytorch-2.9-python313")


# --- the facts file, row by row -----------------------------------------------------------

ARM_FEATURES = {"fp16_fphp_asimdhp": ("fphp", "asimdhp"), "dotprod_asimddp": ("asimddp",)}


@pytest.mark.parametrize("micro", FACTS["cpu_microarchs"], ids=lambda m: m["name"])
def test_every_microarchitecture_of_the_facts_gets_exactly_its_compatible_instruction_sets(catalog, micro) -> None:
    flags: set[str] = set()
    for feature, present in micro["features"].items():
        if present:
            flags.update(ARM_FEATURES.get(feature, (feature,)))
    arch = "aarch64" if micro["isa"] == "aarch64" else "x86_64"
    usable = {isa.name for isa in catalog.isas.values() if isa.platform == arch and set(isa.requires) <= flags}
    assert usable == set(micro["compatible_variants"])
    decision = decide(host(catalog, flags=flags, arch=arch), catalog)
    if micro["compatible_variants"]:
        assert decision.build is not None and decision.build.cpu_isa in micro["compatible_variants"]
    else:
        assert decision.build is None


@pytest.mark.parametrize("gpu", FACTS["gpus"], ids=lambda g: g["name"][:30])
def test_every_gpu_of_the_facts_gets_its_exact_variant_or_none(catalog, gpu) -> None:
    exact = gpu["pickvariant"]["exact_variant"]
    # The host CPU the GPU comes with: aarch64 for the ARM-only architectures (Thor, GB10).
    arm_only = exact is not None and catalog.gpu_archs[exact.lower()].platforms == ("aarch64",)
    dump = "linux-rhel9-neoverse_v2" if arm_only else "linux-unknown-sapphirerapids"
    decision = decide(
        host(catalog, dump, gpus=(gpu["compute_capability"],), driver="580.95.05", driver_cuda="13.0"), catalog
    )
    # The facts name the exact variant of the seeds' matrix; the build repository also builds SM70 (V100).
    native = parse_compute_capability(gpu["compute_capability"]).sm
    if exact is None and native in catalog.gpu_archs and not catalog.gpu_archs[native].tegra:
        exact = native
    if exact is None:
        assert decision.build is None
    else:
        assert decision.build is not None and decision.build.gpu_arch == exact.lower()
    capability = parse_compute_capability(gpu["compute_capability"])
    for fallback in gpu["pickvariant"]["cubin_fallbacks_best_first"]:
        assert kernels_run_on(catalog.gpu_archs[fallback.lower()], capability, catalog) is None


def test_catalog_compute_capabilities_agree_with_the_facts(catalog) -> None:
    by_sm = {g["sm"].replace("_", ""): g["compute_capability"] for g in FACTS["gpus"]}
    for arch in catalog.gpu_archs.values():
        assert by_sm[arch.name] == str(arch.compute_capability)


# --- properties over the whole catalog -----------------------------------------------------


def test_every_variant_is_reachable_by_some_machine(catalog) -> None:
    workload_for = {"avx512bf16": "bf16", "avx512vnni": "int8"}
    for variant in catalog.variants:
        line = catalog.cuda_line(variant)
        if variant.is_mps:
            facts = host(catalog, "darwin-monterey-m2")
            options = Request(branch=variant.branch)
        else:
            isa = catalog.isas[variant.cpu_isa]
            gpus = (str(catalog.gpu_archs[variant.gpu_arch].compute_capability),) if variant.gpu_arch else ()
            arch = catalog.gpu_archs[variant.gpu_arch] if variant.gpu_arch else None
            floors = [line.min_driver] if line else []
            floors += [arch.drivers.first] if arch and arch.drivers and arch.drivers.first else []
            facts = host(
                catalog,
                flags=set(isa.requires),
                arch=isa.platform,
                gpus=gpus,
                driver=str(max(floors)) if floors else None,
                driver_cuda=line.cuda if line else None,
            )
            options = Request(workload=workload_for.get(isa.name, "general"), branch=variant.branch, cuda=variant.cuda)
        decision = decide(facts, catalog, options)
        assert (package(decision), decision.build.branch) == (variant.package, variant.branch)


ALL_FLAGS = sorted(
    {
        "avx",
        "avx2",
        "fma",
        "f16c",
        "avx512f",
        "avx512dq",
        "avx512vl",
        "avx512bw",
        "avx512_bf16",
        "avx512_vnni",
        "fphp",
        "asimdhp",
        "asimddp",
        "sve",
        "sve2",
    }
)
CAPABILITIES = [
    "6.0",
    "6.1",
    "7.0",
    "7.2",
    "7.5",
    "8.0",
    "8.6",
    "8.7",
    "8.9",
    "9.0",
    "10.0",
    "10.1",
    "10.3",
    "11.0",
    "12.0",
    "12.1",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    flags=st.sets(st.sampled_from(ALL_FLAGS)),
    arch=st.sampled_from(["x86_64", "aarch64"]),
    gpus=st.lists(st.sampled_from(CAPABILITIES), max_size=3),
    driver=st.one_of(
        st.none(), st.sampled_from(["470.42.01", "525.60.13", "570.124.06", "575.57.08", "580.65.06", "590.10"])
    ),
    workload=st.sampled_from(["general", "int8", "bf16"]),
)
def test_no_decision_names_a_variant_that_could_crash_or_lack_kernels(
    catalog, flags, arch, gpus, driver, workload
) -> None:
    facts = host(catalog, flags=flags, arch=arch, gpus=tuple(gpus), driver=driver)
    decision = decide(facts, catalog, Request(workload=workload))
    if decision.build is None:
        assert decision.reasons
        return
    variant = decision.build
    assert not why_not(variant, facts, catalog)
    assert catalog.branch(variant.branch).aligned_with is None
    assert set(catalog.isas[variant.cpu_isa].requires) <= facts.cpu.flags
    assert catalog.isas[variant.cpu_isa].platform == arch
    if gpus:
        assert variant.gpu_arch is not None, "a present GPU must never be dropped for a CPU-only build"
        for gpu in facts.gpus:
            assert kernels_run_on(catalog.gpu_archs[variant.gpu_arch], gpu.compute_capability, catalog) is None
        if driver:
            assert facts.driver.version >= catalog.cuda_line(variant).min_driver
    else:
        assert variant.gpu_arch is None


# CPUs as they come: each instruction set level with all below it (a random subset rarely has them).
X86_LEVELS = [
    ("avx",),
    ("avx", "avx2", "fma", "f16c"),
    ("avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512vl", "avx512bw"),
]
X86_LEVELS += [X86_LEVELS[-1] + ("avx512_vnni",), X86_LEVELS[-1] + ("avx512_vnni", "avx512_bf16")]
ARM_LEVELS = [("fphp", "asimdhp", "asimddp"), ("fphp", "asimdhp", "asimddp", "sve", "sve2")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    flags=st.one_of(st.sampled_from(X86_LEVELS + ARM_LEVELS).map(set), st.sets(st.sampled_from(ALL_FLAGS))),
    where=st.sampled_from([("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "aarch64")]),
    gpus=st.lists(st.sampled_from(CAPABILITIES), max_size=3),
    driver=st.one_of(st.none(), st.sampled_from(["470.42.01", "525.60.13", "570.124.06", "580.65.06", "590.10"])),
    workload=st.sampled_from(["general", "int8", "bf16"]),
    torch=st.sampled_from([None, "2.9", "2.10"]),
    cuda=st.sampled_from([None, "12", "12.8", "12.9", "13.0"]),
    python=st.sampled_from([None, "3.12", "3.13"]),
)
def test_the_recipes_grid_is_a_cut_never_a_rule_of_its_own(
    catalog, flags, where, gpus, driver, workload, torch, cuda, python
) -> None:
    """Issue 71 (one walk over builds): the recipes' walk cuts its grid (branches, CUDA lines, instruction sets,
    architectures) so that detect judges a handful of about 1,000 variants, but it decides nothing of its own. Its
    candidates are exactly the catalog's builds that the pins (rules/pins.py, the same rule a source of prebuilt
    builds judges by: `--cuda` leaves a build without CUDA) and the one predicate (compat.refusals) leave, judged
    one by one: a variant it drops that runs here would be a worse answer than the machine should get."""
    os_name, arch = where
    facts = host(catalog, flags=flags, arch=arch, gpus=tuple(gpus), driver=driver, os_name=os_name)
    options = Request(workload=workload, torch=torch, cuda=cuda, python=python)
    try:
        decision = decide(facts, catalog, options, with_hints=False)
    except BadInput:
        return  # a pin that matches nothing the catalog builds: refused before any build is judged
    left = {branch.name for branch in stages.branches(catalog, options)[0]}
    runs_here = {
        variant
        for variant in catalog.variants
        if variant.branch in left
        and not (cuda and cuda_pinned_out(cuda, variant.cuda))
        and not refusals(build_of_variant(catalog, variant), facts, catalog, facts.gpus)
    }
    assert set(decision.candidates) == runs_here
    # In the one order every source's builds are ranked in (rules/ranking.py), this catalog's preferences read.
    order = ranking.Order(
        pythons=tuple(cpython_tag(python) for python in catalog.python_preference),
        isas={name: rank for rank, name in enumerate(catalog.workloads[workload].isa_preference)},
    )
    ranked = [ranking.key(build_of_variant(catalog, variant), order) for variant in decision.candidates]
    assert ranked == sorted(ranking.key(build_of_variant(catalog, variant), order) for variant in runs_here)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    flags=st.one_of(st.sampled_from(X86_LEVELS + ARM_LEVELS).map(set), st.sets(st.sampled_from(ALL_FLAGS))),
    arch=st.sampled_from(["x86_64", "aarch64"]),
    gpus=st.lists(st.sampled_from(CAPABILITIES), max_size=2),
    driver=st.one_of(st.none(), st.sampled_from(["525.60.13", "570.124.06", "580.65.06"])),
    workload=st.sampled_from(["general", "int8", "bf16"]),
    torch=st.sampled_from([None, "2.8", "2.9", "2.10"]),
    cuda=st.sampled_from([None, "12.8", "12.9", "13.0"]),
    branch=st.sampled_from([None, "main", "pytorch-2.9-python313", "pytorch-2.9-vllm-0.14.0"]),
    python=st.sampled_from([None, "3.11", "3.12", "3.13"]),
)
def test_a_decision_does_not_depend_on_what_was_decided_before_with_the_same_catalog(
    catalog,
    flags,
    arch,
    gpus,
    driver,
    workload,
    torch,
    cuda,
    branch,
    python,
) -> None:
    # decide keeps what depends only on the catalog (and the pins) with it: the shared session
    # catalog, after every decision the tests made, must answer as a catalog that never decided.
    facts = host(catalog, flags=flags, arch=arch, gpus=tuple(gpus), driver=driver)
    options = Request(workload=workload, torch=torch, cuda=cuda, branch=branch, python=python)

    def answer(catalog_used: Catalog) -> Decision | str:
        try:
            return decide(facts, catalog_used, options)
        except BadInput as error:
            return str(error)

    assert answer(catalog) == answer(replace(catalog))


def test_every_architecture_whose_kernels_would_run_is_named_with_why_it_lost(catalog) -> None:
    decision = decide(host(catalog, "linux-rhel7-haswell", gpus=("8.9",), driver="580.95.05"), catalog)
    assert decision.build.gpu_arch == "sm89"
    lost = {
        wording.choice(r): wording.why(r)
        for r in decision.rejected
        if wording.choice(r).startswith("GPU architecture ")
    }
    assert set(lost) == {f"GPU architecture {name}" for name in catalog.gpu_archs if name != "sm89"}
    for name in ("sm80", "sm86"):
        assert lost[f"GPU architecture {name}"].startswith(
            "its kernels run on 8.9 too, but sm89 is the higher architecture"
        )


def test_a_branch_without_a_build_for_the_gpu_says_so_rather_than_blame_its_pytorch(catalog) -> None:
    decision = decide(host(catalog, "linux-rhel7-haswell", gpus=("7.0",), driver="580.95.05"), catalog)
    assert decision.build.gpu_arch == "sm70"
    main = next(wording.why(r) for r in decision.rejected if wording.choice(r) == "branch main")
    assert main.startswith("no SM70 build") and "older PyTorch" not in main


@pytest.mark.parametrize(("dump", "gpus"), [("linux-rhel7-haswell", ()), ("darwin-sequoia-m4", ())])
def test_builds_without_cuda_are_explained_without_a_cuda_line(catalog, dump, gpus) -> None:
    from pickvariant.machine.facts import gather_facts

    facts = gather_facts(
        catalog,
        Request(cpuinfo=cpuinfo_path(dump), no_gpu=not dump.startswith("darwin")),
        env={},
        read_gpus_fn=lambda: pytest.fail("a Mac's GPUs are not read through this host's NVML"),
    )
    decision = decide(facts, catalog)
    branch_line = next(reason for reason in decision.reasons if reason.startswith("branch "))
    assert "CUDA" not in branch_line and decision.build.cuda is None
    if dump.startswith("darwin"):
        assert facts.gpus == () and "macOS" in facts.sources["gpus"] and not facts.notes


def test_a_driver_older_than_a_cuda_releases_own_is_said_to_run_it_by_minor_version_compatibility(catalog) -> None:
    """550.54.15 runs CUDA 12.9 builds although 12.9 ships with 575.51.03: by CUDA 12.x minor-version compatibility
    (from 525.60.13), which the reason names; a driver as new as both toolkits' own needs no such words."""
    old = decide(host(catalog, "linux-unknown-sapphirerapids", gpus=("9.0",), driver="550.54.15"), catalog)
    (said,) = [reason for reason in old.reasons if reason.startswith("driver 550.54.15 can run CUDA 12.8, 12.9")]
    assert said.endswith(
        "(CUDA 12.x minor-version compatibility: builds of a release run on any driver >= 525.60.13, older than the "
        "one its toolkit ships with (12.8 with 570.26, 12.9 with 575.51.03))"
    )
    new = decide(host(catalog, "linux-unknown-sapphirerapids", gpus=("9.0",), driver="590.48.01"), catalog)
    (said,) = [reason for reason in new.reasons if reason.startswith("driver 590.48.01 can run CUDA")]
    assert "minor-version" not in said


def _ranked_lower_is_true(catalog: Catalog, decision: Decision, workload: str) -> list[str]:
    """Each "ranks lower" reason checked against the facts it names: what would be false, if anything."""
    chosen = decision.build
    assert chosen is not None
    preference = catalog.workloads[workload].isa_preference
    pythons = catalog.python_preference
    variants = {v.package: v for v in catalog.variants}
    false = []
    for rejection in decision.rejected:
        if rejection.kind != "ranked_lower":
            continue
        facts, said = dict(rejection.facts), wording.why(rejection)
        cause = facts.get("cause")
        name = rejection.subject[1]
        if cause == "isa":
            other = variants[name].cpu_isa
            if not preference.index(facts["preferred"]) < preference.index(other):
                false.append(said)
        elif cause == "torch":
            if not version_key(catalog.branch(name).torch) < version_key(chosen.torch):
                false.append(said)
        elif cause == "python":
            if not pythons.index(chosen.python) < pythons.index(facts["python"]):
                false.append(said)
        elif cause == "branch_isa":
            if not preference.index(facts["preferred"]) < preference.index(facts["isa"]):
                false.append(said)
        elif cause in ("arch", "branch_arch"):
            lower = catalog.gpu_archs[name if cause == "arch" else facts["arch"]].compute_capability
            higher = catalog.gpu_archs[facts["better" if cause == "arch" else "preferred"]].compute_capability
            if facts.get("higher", "yes") == "yes" and not lower < higher:
                false.append(said)
        elif cause == "order":
            ranked = [v.package for v in decision.candidates]
            if not ranked.index(facts["example"]) > ranked.index(chosen.package):
                false.append(said)
    return false


@pytest.mark.parametrize(
    "dump",
    [
        "linux-rhel9-neoverse_v2",
        "linux-rhel7-haswell",
        "linux-unknown-sapphirerapids",
        "linux-rhel7-ivybridge",
        "linux-rocky8.5-zen4",
        "linux-amazon-neoverse_n1",
    ],
)
def test_every_ranks_lower_reason_states_what_the_order_found(catalog, dump) -> None:
    """ "prefers", "older", "ranks after": each is checked against the facts it names, over GPUs, workloads and sets
    (Grace + H100 --with vllm once said the workload prefers armv8_2 while ranking armv9 first)."""
    from pickvariant.machine.facts import gather_facts

    checked = 0
    for gpus in ((), ("9.0",), ("8.6",), ("7.5",), ("6.1",)):
        for workload in catalog.workloads:
            for projects in ((), ("torchvision",), ("vllm",), ("torchaudio",)):
                request = Request(
                    cpuinfo=cpuinfo_path(dump),
                    gpus=gpus,
                    no_gpu=not gpus,
                    driver="580.95.05" if gpus else None,
                    workload=workload,
                    with_projects=projects,
                )
                try:
                    decision = decide(gather_facts(catalog, request, env={}), catalog, request)
                except BadInput:
                    continue
                if decision.build is None:
                    continue
                assert _ranked_lower_is_true(catalog, decision, workload) == []
                checked += sum(r.kind == "ranked_lower" for r in decision.rejected)
    assert checked > 0


def _rejection_is_true(catalog: Catalog, facts_of: HostFacts, decision: Decision, rejection) -> str | None:
    """One rejection of a kind other than ranked_lower checked against the facts it names, with the machine's and
    the catalog's own data, not the rules' code: the sentence if it is false, else None."""
    facts, said = dict(rejection.facts), wording.why(rejection)
    name = rejection.subject[1]
    if rejection.kind == "cpu_lacks_flags":
        requires = set(catalog.isas[name].requires)
        missing = set(facts["missing"])
        ok = missing and missing <= requires and not missing & set(facts_of.cpu.flags)
        ok = ok and all(flag in said for flag in missing)
    elif rejection.kind == "driver" and "Jetson driver" in said:
        tegra = any(catalog.is_tegra(gpu.compute_capability) for gpu in facts_of.gpus)
        ok = tegra and facts_of.driver is not None and facts_of.driver.cuda is None
    elif rejection.kind == "driver":
        lines = [line for b in catalog.branches for line in b.cuda_lines if line.cuda == name]
        version = facts_of.driver.version if facts_of.driver else None
        ok = bool(lines) and version is not None and str(version) in said
        ok = ok and ("cannot drive" in said or all(version < line.min_driver for line in lines))
        ok = ok and ("cannot drive" in said or str(lines[0].min_driver) in said)
    elif rejection.kind == "no_kernels":
        gpu = next(g for g in facts_of.gpus if str(g.index) == facts["gpu"])
        built = catalog.gpu_archs[name].compute_capability
        same_kind = catalog.is_tegra(built) == catalog.is_tegra(gpu.compute_capability)
        runs = same_kind and built.major == gpu.compute_capability.major and built.minor <= gpu.compute_capability.minor
        runs = runs and (not catalog.is_tegra(built) or built == gpu.compute_capability)
        ok = not runs and f"{built}" in said and f"{gpu.compute_capability}" in said
    elif rejection.kind == "aligned_branch":
        ok = catalog.branch(name).aligned_with == facts["aligned_with"] and facts["aligned_with"] in said
    else:
        return None
    return None if ok else said


@pytest.mark.parametrize(
    ("dump", "gpus", "driver"),
    [
        ("linux-rhel7-haswell", ("9.0",), "550.163.01"),
        ("linux-rhel7-haswell", ("6.1",), "580.95.05"),
        ("linux-unknown-sapphirerapids", ("8.0", "8.6"), "580.95.05"),
        ("linux-unknown-sapphirerapids", ("10.3",), "580.65.06"),
        ("linux-rhel9-neoverse_v2", ("12.1",), "580.95.05"),
        ("linux-rhel9-neoverse_v2", ("11.0",), "580.95.05"),
        ("linux-rhel7-ivybridge", ("7.5",), "525.60.13"),
    ],
)
def test_every_rejection_states_what_its_stage_found(catalog, dump, gpus, driver) -> None:
    """CPU flags, driver minimums, kernel compatibility, alignment: each rejection's sentence is checked against the
    facts it names, read back from the machine and the catalog (ranked_lower has its own test above)."""
    from pickvariant.machine.facts import gather_facts

    request = Request(cpuinfo=cpuinfo_path(dump), gpus=gpus, driver=driver)
    facts = gather_facts(catalog, request, env={})
    decision = decide(facts, catalog, request)
    checked = [r for r in decision.rejected if r.kind != "ranked_lower"]
    assert checked and [said for r in checked if (said := _rejection_is_true(catalog, facts, decision, r))] == []
