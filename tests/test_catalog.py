from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from conftest import REPO

from pickvariant._base.errors import BadInput
from pickvariant.sources.flox.recipes.load import load_catalog, parse_catalog, schema_checked_before
from pickvariant.sources.flox.recipes.sync_files import render as sync_render

RAW = json.loads((REPO / "catalog.json").read_text())
SCHEMA = json.loads(
    (REPO / "pickvariant" / "sources" / "flox" / "recipes" / "data" / "catalog.schema.json").read_text()
)


def test_the_shipped_catalog_is_valid_for_the_real_json_schema_library_too() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(RAW, SCHEMA)


def test_the_shipped_catalog_records_the_upstream_commit_it_was_synced_from(catalog) -> None:
    assert catalog.source.repo == "https://github.com/barstoolbluz/build-pytorch"
    assert catalog.source.commit.startswith("670c310") and catalog.source.date.startswith("2026-02-28")


def test_branches_with_their_torch_python_and_cuda_lines(catalog) -> None:
    rows = {
        b.name: (b.torch, b.python, tuple(line.cuda for line in b.cuda_lines), b.aligned_with, len(b.variants))
        for b in catalog.branches
    }
    assert rows == {
        "main": ("2.8.0", "3.13", ("12.8",), None, 58),
        "pytorch-2.8-python311": ("2.8.0", "3.11", ("12.8",), None, 58),
        "pytorch-2.8-python312": ("2.8.0", "3.12", ("12.8",), None, 58),
        "pytorch-2.9-python311": ("2.9.1", "3.11", ("12.8", "12.9"), None, 131),
        "pytorch-2.9-python313": ("2.9.1", "3.13", ("12.8", "12.9", "13.0"), None, 177),
        "pytorch-2.9-vllm-0.14.0": ("2.9.1", "3.12", ("12.8", "12.9"), "vllm 0.14.0", 131),
        "pytorch-2.9-vllm-0.15.1": ("2.9.1", "3.13", ("12.8", "12.9"), "vllm 0.15.1", 117),
        "pytorch-2.10-python313": ("2.10.0", "3.13", ("12.8", "12.9", "13.0", "13.1"), None, 237),
    }
    lines = {
        (line.branch, line.cuda): (line.cuda_packages, line.nixpkgs_rev[:7], str(line.min_driver))
        for b in catalog.branches
        for line in b.cuda_lines
    }
    assert lines[("pytorch-2.10-python313", "13.1")] == ("cudaPackages_13_1", "2017d6d", "580.65.06")
    assert lines[("pytorch-2.10-python313", "13.0")] == ("cudaPackages_13", "6a030d5", "580.65.06")
    assert lines[("pytorch-2.10-python313", "12.9")] == ("cudaPackages_12_9", "0182a36", "525.60.13")
    assert lines[("main", "12.8")] == ("cudaPackages_12_8", "fe5e41d", "525.60.13")


def test_the_same_package_name_is_several_variants_told_apart_by_branch(catalog) -> None:
    name = "pytorch-python313-cuda12_8-sm90-avx512"
    assert {(v.branch, v.torch) for v in catalog.variants if v.package == name} == {
        ("main", "2.8.0"),
        ("pytorch-2.9-python313", "2.9.1"),
        ("pytorch-2.9-vllm-0.15.1", "2.9.1"),
        ("pytorch-2.10-python313", "2.10.0"),
    }
    with pytest.raises(BadInput, match="built on 4 branches"):
        catalog.variant(name)
    assert catalog.variant(name, "main").torch == "2.8.0"


def test_sm61_and_sm70_build_without_cudnn_and_only_up_to_cuda_12_9(catalog) -> None:
    old = [v for v in catalog.variants if v.gpu_arch in ("sm61", "sm70")]
    assert old and all(not v.cudnn and v.cuda in ("12.8", "12.9") for v in old)
    assert {v.branch for v in old if v.gpu_arch == "sm70"} == {"pytorch-2.9-python311", "pytorch-2.9-vllm-0.14.0"}


def test_apple_silicon_has_an_mps_build_on_every_branch(catalog) -> None:
    mps = [v for v in catalog.variants if v.is_mps]
    assert {v.branch for v in mps} == {b.name for b in catalog.branches}
    assert all(v.platform == "aarch64-darwin" and v.cpu_isa is None and v.cuda is None for v in mps)


def test_a_variants_platform_follows_its_instruction_set_not_the_recipes_extra_systems(catalog) -> None:
    # The build repository's cpu-avx2 recipes also list aarch64-linux (KNOWN-ERRORS.md).
    assert {v.platform for v in catalog.variants if v.cpu_isa == "avx2"} == {"x86_64-linux"}


def test_seed_errors_are_corrected(catalog) -> None:
    archs = catalog.gpu_archs
    assert archs["sm121"].platforms == ("aarch64",) and archs["sm110"].platforms == ("aarch64",)
    assert archs["sm110"].tegra and not archs["sm121"].tegra
    assert any("L40S" in product for product in archs["sm89"].products)
    assert not any("L40S" in product for product in archs["sm90"].products)
    assert not any("Orin" in product for product in archs["sm110"].products)
    assert (archs["sm103"].min_cuda, archs["sm121"].min_cuda, archs["sm110"].min_cuda, archs["sm61"].max_cuda) == (
        "12.9",
        "12.9",
        "13.0",
        "12.9",
    )
    assert catalog.isas["avx512vnni"].requires[-1] == "avx512_vnni"
    assert "sve2" in catalog.isas["armv9"].requires and "sve2" not in catalog.isas["armv8_2"].requires


def test_every_fact_carries_its_source() -> None:
    facts_lists = [
        "cpu_isas",
        "gpu_archs",
        "tegra_compute_capabilities",
        "flag_aliases",
        "peak_tflops",
        "compiler_flags",
        "nixpkgs_pins",
        "torch_sources",
    ]
    for key in facts_lists:
        for entry in RAW[key]:
            assert entry["source"].strip(), f"{key} entry {entry} has no source"
    for release in RAW["cuda_releases"]:
        assert release["min_driver_source"].strip()


def test_catalog_is_found_from_an_environment_variable(tmp_path, monkeypatch) -> None:
    site = tmp_path / "site-catalog.json"
    site.write_text(json.dumps(RAW))
    monkeypatch.setenv("PICKVARIANT_CATALOG", str(site))
    assert load_catalog().path == site


def _broken(mutate) -> dict:
    data = copy.deepcopy(RAW)
    mutate(data)
    return data


def _variant_index(data: dict, package: str, branch: str) -> int:
    return next(i for i, v in enumerate(data["variants"]) if (v["package"], v["branch"]) == (package, branch))


def _append_variant(data: dict, **changes) -> None:
    row = dict(data["variants"][_variant_index(data, "pytorch-python313-cuda13_1-sm90-avx2", "pytorch-2.10-python313")])
    row.update(changes)
    data["variants"].append(row)


BROKEN = {
    "missing min_driver": (lambda d: d["cuda_releases"][0].pop("min_driver"), "cuda_releases[0].min_driver"),
    "line driver differs from the facts": (
        lambda d: d["branches"][0]["cuda_lines"][0].update(min_driver="550.1"),
        "branches[0].cuda_lines[0].min_driver",
    ),
    "unknown isa in a variant": (lambda d: d["variants"][3].update(cpu_isa="avx1024"), "variants[3].cpu_isa"),
    "unknown sm in a variant": (lambda d: d["variants"][9].update(gpu_arch="sm99"), "variants[9]"),
    "duplicate package on a branch": (lambda d: d["variants"].append(dict(d["variants"][0])), "duplicate"),
    "bad driver": (lambda d: d["cuda_releases"][0].update(min_driver="new"), "cuda_releases[0].min_driver"),
    "wrong type": (lambda d: d["gpu_archs"][0].update(tegra="no"), "gpu_archs[0].tegra"),
    "unknown field": (lambda d: d["cpu_isas"][0].update(colour="red"), "cpu_isas[0].colour"),
    "sm121 on x86": (
        lambda d: _append_variant(d, package="pytorch-python313-cuda13_1-sm121-avx2", gpu_arch="sm121"),
        "cpu_isa",
    ),
    "sm110 in cuda 12.9": (
        lambda d: _append_variant(
            d,
            package="x-sm110",
            gpu_arch="sm110",
            cpu_isa="armv9",
            platform="aarch64-linux",
            cuda="12.9",
            nixpkgs_rev="0182a361324364ae3f436a63005877674cf45efb",
        ),
        "CUDA 12.9",
    ),
    "line the branch lacks": (lambda d: _append_variant(d, package="x-sm90", cuda="12.6"), "no CUDA 12.6 line"),
    "avx512 on an ARM system": (
        lambda d: _append_variant(d, package="x-arm", cpu_isa="avx512", platform="aarch64-linux"),
        "cannot run avx512",
    ),
    "torch disagrees with its branch": (
        lambda d: _append_variant(d, package="x-torch", torch="2.9.1"),
        "PyTorch 2.9.1",
    ),
    "workload ranks an unknown isa": (
        lambda d: d["workloads"]["int8"]["isa_preference"].append("avx10"),
        "workloads.int8",
    ),
    "peak name pattern is no regex": (
        lambda d: d["peak_tflops"][0].update(name_pattern="H100 ("),
        "peak_tflops[0].name_pattern",
    ),
    "capability the schema allows but no GPU has": (
        lambda d: d["gpu_archs"][0].update(compute_capability="610.1"),
        "gpu_archs[0].compute_capability",
    ),
    "driver the schema allows but no driver has": (
        lambda d: d["cuda_releases"][0].update(min_driver="58000.65"),
        "cuda_releases[0].min_driver",
    ),
    "isa with a dispatch level torch lacks": (
        lambda d: d["cpu_isas"][0].update(torch_cpu_capability="AVX1024"),
        "cpu_isas[0].torch_cpu_capability",
    ),
    "isa compiled with flags it does not require": (
        lambda d: d["cpu_isas"][1]["compiler_flags"].append("-mavx512f"),
        "cpu_isas[1].compiler_flags",
    ),
    "package escaping the recipe directory": (
        lambda d: d["variants"][0].update(package="../../etc/passwd"),
        "variants[0].package",
    ),
    # Variant rows are checked column by column; any failure must still name the row and field.
    "integer where a boolean belongs": (
        lambda d: d["variants"][5].update(cudnn=1),
        "variants[5].cudnn: expected boolean",
    ),
    "row lacking a field": (lambda d: d["variants"][7].pop("path"), "variants[7].path: required"),
    "row with an extra field": (lambda d: d["variants"][8].update(extra=1), "variants[8].extra: unknown field"),
    "list where a package name belongs": (
        lambda d: d["variants"][9].update(package=["x"]),
        "variants[9].package: expected string",
    ),
    "row that is no object": (lambda d: d["variants"].insert(4, "x"), "variants[4]: expected object"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_catalogs_are_rejected_naming_the_field(case) -> None:
    mutate, field = BROKEN[case]
    with pytest.raises(BadInput) as raised:
        parse_catalog(_broken(mutate), Path("catalog.json"))
    assert field in str(raised.value)


def test_the_real_json_schema_library_rejects_what_the_schema_alone_rejects() -> None:
    for case in (
        "missing min_driver",
        "bad driver",
        "wrong type",
        "unknown field",
        "package escaping the recipe directory",
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(_broken(BROKEN[case][0]), SCHEMA)


def test_every_keyword_of_the_schema_is_one_the_report_knows() -> None:
    """The schema is checked by jsonschema, which honours every keyword; this holds the reports to
    pickvariant's wording (a keyword without one would read as "does not satisfy ...")."""
    from pickvariant._base import schema

    def keywords(node: object) -> set[str]:
        if isinstance(node, dict):
            found = set(node)
            for key, value in node.items():
                found |= (
                    set().union(*map(keywords, value.values()))
                    if key in ("properties", "$defs") and isinstance(value, dict)
                    else keywords(value)
                )
            return found
        return set().union(*map(keywords, node)) if isinstance(node, list) else set()

    annotations = {"$schema", "$defs", "$ref", "title", "description", "properties", "items"}
    assert keywords(SCHEMA) - annotations <= set(schema._KEYWORD_ORDER)


def test_an_empty_reason_is_refused_as_the_schema_says() -> None:
    """minLength: the hand-written validator this replaced ignored it, and a patch kept without a why loaded."""
    with pytest.raises(
        BadInput, match=r"torch_sources\[0\]\.nixpkgs_patches\[0\]\.why: '' is shorter than 1 character"
    ):
        parse_catalog(
            _broken(lambda d: d["torch_sources"][0]["nixpkgs_patches"][0].update(why="")), Path("catalog.json")
        )


def test_the_shipped_catalog_holds_exactly_the_hardware_facts_of_hardware_json() -> None:
    """One copy of every fact: `catalog sync` embeds hardware.json; a fact edited there without a re-sync fails here."""
    facts = json.loads((REPO / "pickvariant" / "sources" / "data" / "hardware.json").read_text())
    for key, value in facts.items():
        if key != "$comment":
            assert RAW[key] == value, f"catalog.json's {key} differs from hardware.json: run `pickvariant catalog sync`"


def test_unreadable_or_invalid_catalog_files_are_bad_input(tmp_path) -> None:
    with pytest.raises(BadInput, match="cannot read"):
        load_catalog(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(BadInput, match="not valid JSON"):
        load_catalog(bad)


def test_the_shipped_catalog_carries_a_stamp_that_holds_so_detect_skips_the_schema_pass() -> None:
    raw = (REPO / "catalog.json").read_bytes()
    # Failing here means catalog.json or the schema changed without a re-sync: run
    # `pickvariant catalog sync <build repository> -o catalog.json` (it validates and stamps).
    assert schema_checked_before(raw)
    assert sync_render(RAW) == raw.decode("utf-8")  # the stamp is what sync writes, over what it reads back


def test_a_stamped_catalog_that_was_edited_afterwards_is_validated_again(tmp_path) -> None:
    edited = (
        (REPO / "catalog.json")
        .read_text(encoding="utf-8")
        .replace('"min_driver": "580.65.06"', '"min_driver": "five hundred"', 1)
    )
    path = tmp_path / "site-catalog.json"
    path.write_text(edited, encoding="utf-8")
    assert not schema_checked_before(edited.encode("utf-8"))
    with pytest.raises(BadInput, match="min_driver"):
        load_catalog(path)


def test_a_stamp_spares_the_schema_only_for_the_shipped_catalog(tmp_path) -> None:
    """Anyone can recompute a checksum: a catalog from elsewhere (PICKVARIANT_CATALOG, a colleague's, a site share)
    carrying a valid stamp is still checked whole, so a forged one is refused naming the field."""
    broken = dict(RAW, surplus="a field the schema does not allow")
    stamped = tmp_path / "stamped.json"
    stamped.write_text(sync_render(broken), encoding="utf-8")
    assert schema_checked_before(stamped.read_bytes())  # the stamp matches: it is recomputed, as a forger would
    with pytest.raises(BadInput, match="surplus: unknown field"):
        load_catalog(stamped)
    forged = copy.deepcopy(RAW)
    forged["branches"][0]["cuda_lines"][0]["cuda_packages"] = (
        'cudaPackages_12_9; pwned = builtins.readFile "/etc/hostname"'
    )
    (tmp_path / "forged.json").write_text(sync_render(forged), encoding="utf-8")
    with pytest.raises(BadInput, match="cuda_packages"):
        load_catalog(tmp_path / "forged.json")


def test_values_that_reach_nix_code_a_path_or_a_command_are_checked_where_they_are_used(tmp_path) -> None:
    """Even a catalog that was never schema-checked (as a trusted stamp would have let through) cannot write Nix code
    into a recipe or name a path outside the build directory."""
    from pickvariant.sources.flox.recipes.render import recipe_path, render

    forged = copy.deepcopy(RAW)
    line = forged["branches"][0]["cuda_lines"][0]
    line["cuda_packages"] = 'cudaPackages_12_9; pwned = builtins.readFile "/etc/hostname"'
    catalog = parse_catalog(forged, tmp_path / "forged.json", schema_checked=True)
    branch = catalog.branch(forged["branches"][0]["name"])
    variant = next(v for v in branch.variants if v.cuda == line["cuda"] and not v.is_mps)
    with pytest.raises(BadInput, match="is not a Nix identifier"):
        render(variant, catalog)
    escaping = copy.deepcopy(RAW)
    row = next(r for r in escaping["variants"] if r["cuda"] is None and r["platform"] == "x86_64-linux")
    row["package"] = "../../../../../../tmp/x"
    catalog = parse_catalog(escaping, tmp_path / "escaping.json", schema_checked=True)
    victim = next(v for v in catalog.variants if v.package == "../../../../../../tmp/x")
    with pytest.raises(BadInput, match="is not one"):
        recipe_path(tmp_path / "pkgs", victim)
