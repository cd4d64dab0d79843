from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest

from conftest import DATA, REPO
from pickvariant.catalog import load_catalog, parse_catalog
from pickvariant.errors import BadInput

RAW = json.loads((REPO / "catalog.json").read_text())
SCHEMA = json.loads((REPO / "pickvariant" / "catalog.schema.json").read_text())


def seed_003_packages() -> set[str]:
    text = (DATA / "seed-003-build-matrix.md").read_text()
    matrix = text.split("### Complete Variant Matrix", 1)[1].split("### Variants on Other Branches", 1)[0]
    return set(re.findall(r"\.flox/pkgs/(pytorch-[a-z0-9_-]+)\.nix", matrix))


def test_the_shipped_catalog_is_valid_for_the_real_json_schema_library_too() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(RAW, SCHEMA)


def test_branches_newest_first_with_the_facts_values(catalog) -> None:
    rows = [(b.name, b.torch, b.cuda, str(b.min_driver), b.nixpkgs_rev[:7], len(b.variants)) for b in catalog.branches]
    assert rows == [
        ("cuda-13_0", "2.10.0", "13.0", "580.65.06", "6a030d5", 59),
        ("cuda-12_9", "2.9.1", "12.9", "525.60.13", "6a030d5", 50),
        ("main", "2.8.0", "12.8", "525.60.13", "fe5e41d", 44),
    ]


def test_cuda_13_variants_are_exactly_the_59_of_seed_003(catalog) -> None:
    assert {v.package for v in catalog.branch("cuda-13_0").variants} == seed_003_packages()


def test_older_branches_have_the_issue_matrix(catalog) -> None:
    def matrix(name: str) -> set[tuple[str | None, str]]:
        return {(v.gpu_arch, v.cpu_isa) for v in catalog.branch(name).variants}

    six = {"avx2", "avx512", "avx512bf16", "avx512vnni", "armv8_2", "armv9"}
    sms = ["sm75", "sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm120"]
    expected = {("sm61", "avx"), ("sm61", "avx2")} | {(sm, isa) for sm in sms for isa in six}
    assert matrix("cuda-12_9") == expected
    assert matrix("main") == {pair for pair in expected if pair[0] != "sm103"}
    assert "pytorch-python313-cuda12_8-sm61-avx2" in {v.package for v in catalog.branch("main").variants}


def test_seed_errors_are_corrected(catalog) -> None:
    archs = catalog.gpu_archs
    assert archs["sm121"].platforms == ("aarch64",) and archs["sm110"].platforms == ("aarch64",)
    assert archs["sm110"].tegra and not archs["sm121"].tegra
    assert any("L40S" in product for product in archs["sm89"].products)
    assert not any("L40S" in product for product in archs["sm90"].products)
    assert not any("Orin" in product for product in archs["sm110"].products)
    assert (archs["sm103"].min_cuda, archs["sm121"].min_cuda, archs["sm110"].min_cuda, archs["sm61"].max_cuda) == ("12.9", "12.9", "13.0", "12.9")
    assert catalog.isas["avx512vnni"].requires[-1] == "avx512_vnni"
    assert "sve2" in catalog.isas["armv9"].requires and "sve2" not in catalog.isas["armv8_2"].requires


def test_every_fact_carries_its_source() -> None:
    facts_lists = ["cpu_isas", "gpu_archs", "tegra_compute_capabilities", "flag_aliases", "peak_tflops"]
    for key in facts_lists:
        for entry in RAW[key]:
            assert entry["source"].strip(), f"{key} entry {entry} has no source"
    for branch in RAW["branches"]:
        assert branch["min_driver_source"].strip() and branch["variants_source"].strip()


def test_catalog_is_found_from_an_environment_variable(tmp_path, monkeypatch) -> None:
    site = tmp_path / "site-catalog.json"
    site.write_text(json.dumps(RAW))
    monkeypatch.setenv("PICKVARIANT_CATALOG", str(site))
    assert load_catalog().path == site


def _broken(mutate) -> dict:
    data = copy.deepcopy(RAW)
    mutate(data)
    return data


BROKEN = {
    "missing min_driver": (lambda d: d["branches"][0].pop("min_driver"), "branches[0].min_driver"),
    "unknown isa in a variant": (lambda d: d["branches"][1]["variants"][0].update(cpu_isa="avx1024"), "branches[1].variants[0].cpu_isa"),
    "unknown sm in a variant": (lambda d: d["branches"][0]["variants"][9].update(gpu_arch="sm99"), "branches[0].variants[9]"),
    "duplicate package": (lambda d: d["branches"][2]["variants"].append(dict(d["branches"][2]["variants"][0])), "package"),
    "bad driver": (lambda d: d["branches"][0].update(min_driver="new"), "branches[0].min_driver"),
    "wrong type": (lambda d: d["gpu_archs"][0].update(tegra="no"), "gpu_archs[0].tegra"),
    "unknown field": (lambda d: d["cpu_isas"][0].update(colour="red"), "cpu_isas[0].colour"),
    "sm121 on x86": (lambda d: d["branches"][0]["variants"].append({"package": "pytorch-python313-cuda13_0-sm121-avx2", "gpu_arch": "sm121", "cpu_isa": "avx2"}), "cpu_isa"),
    "sm110 in cuda 12.9": (lambda d: d["branches"][1]["variants"].append({"package": "pytorch-python313-cuda12_9-sm110-armv9", "gpu_arch": "sm110", "cpu_isa": "armv9"}), "CUDA 12.9"),
    "workload ranks an unknown isa": (lambda d: d["workloads"]["int8"]["isa_preference"].append("avx10"), "workloads.int8"),
    "peak name pattern is no regex": (lambda d: d["peak_tflops"][0].update(name_pattern="H100 ("), "peak_tflops[0].name_pattern"),
    "capability the schema allows but no GPU has": (lambda d: d["gpu_archs"][0].update(compute_capability="610.1"), "gpu_archs[0].compute_capability"),
    "driver the schema allows but no driver has": (lambda d: d["branches"][0].update(min_driver="58000.65"), "branches[0].min_driver"),
    "isa with a dispatch level torch lacks": (lambda d: d["cpu_isas"][0].update(torch_cpu_capability="AVX1024"), "cpu_isas[0].torch_cpu_capability"),
    "package escaping the recipe directory": (lambda d: d["branches"][0]["variants"][0].update(package="../../etc/passwd"), "branches[0].variants[0].package"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_catalogs_are_rejected_naming_the_field(case) -> None:
    mutate, field = BROKEN[case]
    with pytest.raises(BadInput) as raised:
        parse_catalog(_broken(mutate), Path("catalog.json"))
    assert field in str(raised.value)


def test_the_real_json_schema_library_rejects_what_the_schema_alone_rejects() -> None:
    for case in ("missing min_driver", "bad driver", "wrong type", "unknown field"):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(_broken(BROKEN[case][0]), SCHEMA)


def test_unreadable_or_invalid_catalog_files_are_bad_input(tmp_path) -> None:
    with pytest.raises(BadInput, match="cannot read"):
        load_catalog(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(BadInput, match="not valid JSON"):
        load_catalog(bad)
