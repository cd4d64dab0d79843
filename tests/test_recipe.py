from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import TESTS, require
from pickvariant.cli import app
from pickvariant.recipe import nix_string, render

NIX = TESTS / "nix"
GOLDEN = TESTS / "golden"
GOLDEN_PACKAGES = [
    "pytorch-python313-cuda13_0-sm90-avx512",
    "pytorch-python313-cuda13_0-sm121-armv9",
    "pytorch-python313-cpu-avx2",
    "pytorch-python313-cuda12_9-sm61-avx",
    "pytorch-python313-cuda12_8-sm89-avx512vnni",
]
runner = CliRunner()


def nix_instantiate() -> str:
    path = shutil.which("nix-instantiate")
    require(path is not None, "nix-instantiate is not installed (Debian package nix-bin)")
    return path or ""


def nix_eval(expression_file: Path, **args: str) -> object:
    command = [nix_instantiate(), "--eval", "--strict", "--json", str(expression_file)]
    for name, value in args.items():
        command += ["--arg", name, value]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def write_branch(tmp_path: Path, branch: str) -> Path:
    out = tmp_path / branch
    result = runner.invoke(app, ["recipe", "--all", "--branch", branch, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("branch", ["cuda-13_0", "cuda-12_9", "main"])
def test_every_recipe_parses_and_evaluates_to_what_the_catalog_says(tmp_path, catalog, branch) -> None:
    nix = nix_instantiate()
    out = write_branch(tmp_path, branch)
    variants = catalog.branch(branch).variants
    files = sorted(out.glob("*.nix"))
    assert [f.stem for f in files] == sorted(v.package for v in variants)
    parsed = subprocess.run([nix, "--parse", *map(str, files)], capture_output=True, text=True, timeout=300)
    assert parsed.returncode == 0, parsed.stderr
    listing = tmp_path / f"all-{branch}.nix"
    names = " ".join(f'"{v.package}" = import {NIX / "eval-recipe.nix"} {{ recipe = {out / (v.package + ".nix")}; torchVersion = "{catalog.branch(branch).torch}"; }};' for v in variants)
    listing.write_text("{ " + names + " }\n")
    results = nix_eval(listing)
    b = catalog.branch(branch)
    for variant in variants:
        got = results[variant.package]
        isa = catalog.isas[variant.cpu_isa]
        system = catalog.nix_systems[isa.platform]
        assert got["pname"] == b.pname_prefix + variant.package.removeprefix("pytorch")
        assert got["version"] == b.torch
        assert got["meta"]["platforms"] == [system]
        assert got["pickvariant"]["cpuFlags"] == list(isa.compiler_flags)
        flags = " ".join(isa.compiler_flags)
        assert f'export CXXFLAGS="$CXXFLAGS {flags}"' in got["preConfigure"]
        assert f'export CFLAGS="$CFLAGS {flags}"' in got["preConfigure"]
        assert got["fromNixpkgs"]["rev"] == b.nixpkgs_rev and got["fromNixpkgs"]["system"] == system
        for name, value in {**(catalog.gpu_archs[variant.gpu_arch].build_env if variant.gpu_arch else {}), **isa.build_env}.items():
            assert got["pickvariant"]["extraBuildEnv"][name] == value
            assert f"export {name}={value}" in got["preConfigure"]
        if variant.gpu_arch:
            arch = catalog.gpu_archs[variant.gpu_arch]
            assert got["overrideArgs"] == {"cudaSupport": True, "gpuTargets": [str(arch.compute_capability)]}
            assert f'export TORCH_CUDA_ARCH_LIST="{arch.compute_capability}"' in got["preConfigure"]
            assert got["fromNixpkgs"]["cudaPackages"] == b.cuda
            assert got["fromNixpkgs"]["config"]["cudaSupport"] is True
        else:
            assert got["overrideArgs"] == {"cudaSupport": False}
            assert got["fromNixpkgs"]["config"]["cudaSupport"] is False
        if b.recipe == "cuda13" and variant.gpu_arch:
            assert got["fromNixpkgs"]["overlayCount"] == 3
            assert got["fromNixpkgs"]["magmaPatches"][-1] == "cuda-13.0-clockrate-fix.patch"
            assert "-DCUDA_VERSION=13.0" in got["cmakeFlags"] and f"-DTORCH_BUILD_VERSION={b.torch}" in got["cmakeFlags"]
            assert "FindCUDAToolkit.cmake" in got["postPatch"]
        if b.torch_source is not None and (b.recipe == "cuda13" or not variant.gpu_arch):
            assert got["src"]["fetcher"] == "fetchFromGitHub" and got["src"]["rev"] == b.torch_source.rev
            assert got["src"]["fetchSubmodules"] is True and got["patches"] == []
        else:
            assert got["src"]["fetcher"] == "nixpkgs-default"


def test_cuda12_recipe_warns_when_the_pin_has_another_torch(tmp_path, catalog) -> None:
    nix = nix_instantiate()
    out = tmp_path / "r.nix"
    out.write_text(render(catalog.variant("pytorch-python313-cuda12_9-sm90-avx2"), catalog))
    result = subprocess.run(
        [nix, "--eval", "--strict", "--json", str(NIX / "eval-recipe.nix"), "--arg", "recipe", str(out), "--argstr", "torchVersion", "2.7.1"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "the pinned nixpkgs has torch 2.7.1, the catalog expects 2.9.1" in result.stderr


def test_seed_000_verification_passes_on_the_cuda_13_matrix(tmp_path, catalog) -> None:
    """The plan's own shell checks (seed 000, Verification), adapted to the 59-variant matrix."""
    out = write_branch(tmp_path, "cuda-13_0")
    gpu = sorted(out.glob("pytorch-python313-cuda13_0-*.nix"))
    cpu = sorted(out.glob("pytorch-python313-cpu-*.nix"))
    assert (len(gpu), len(cpu)) == (52, 7)
    assert not list(out.glob("*-magma.nix")) and not list(out.glob("*-nightly.nix"))
    assert not [f for f in gpu if f.name.endswith("-avx.nix")]
    markers = re.compile(r'cudaPackages_13|cuda-13\.0-clockrate-fix\.patch|version = "2\.10\.0"')
    for path in gpu:
        assert sum(1 for line in path.read_text().splitlines() if markers.search(line)) == 3, path.name
    for path in cpu:
        text = path.read_text()
        assert sum(1 for line in text.splitlines() if 'version = "2.10.0"' in line) == 1, path.name
        assert "cudaPackages_13" not in text
    assert not [f for f in out.iterdir() if "fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3" in f.read_text()]
    for arch in catalog.gpu_archs.values():
        files = list(out.glob(f"pytorch-python313-cuda13_0-{arch.name}-*.nix"))
        assert all(f'gpuArchSM = "{arch.compute_capability}";' in f.read_text() for f in files)
    assert len(list(out.glob("pytorch-python313-cuda13_0-sm121-*.nix"))) == 2


@pytest.mark.parametrize("package", GOLDEN_PACKAGES)
def test_golden_recipes(catalog, package) -> None:
    """A template change shows up here as a readable diff; PICKVARIANT_UPDATE_GOLDEN=1 rewrites them."""
    text = render(catalog.variant(package), catalog)
    golden = GOLDEN / f"{package}.nix"
    if os.environ.get("PICKVARIANT_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()


@pytest.mark.parametrize("value", ['plain', 'quote " and backslash \\', "${builtins.abort \"injected\"}", "new\nline\ttab $HOME ''", "\\${x}"])
def test_nix_strings_hold_exactly_the_value(tmp_path, value) -> None:
    expression = tmp_path / "s.nix"
    expression.write_text(nix_string(value) + "\n")
    assert nix_eval(expression) == value


def test_recipe_prints_to_stdout_and_writes_atomically_without_clobbering(tmp_path) -> None:
    package = "pytorch-python313-cuda13_0-sm89-avx2"
    printed = runner.invoke(app, ["recipe", package])
    assert printed.exit_code == 0 and printed.stdout.startswith("# PyTorch 2.10.0")
    out = tmp_path / "pkgs"
    assert runner.invoke(app, ["recipe", package, "-o", str(out)]).exit_code == 0
    target = out / f"{package}.nix"
    assert target.read_text() == printed.stdout
    again = runner.invoke(app, ["recipe", package, "-o", str(out)])
    assert again.exit_code == 0 and "unchanged" in again.stdout
    target.write_text("# my own edits\n")
    refused = runner.invoke(app, ["recipe", package, "-o", str(out)])
    assert refused.exit_code == 2 and str(target) in refused.stderr
    assert target.read_text() == "# my own edits\n"
    assert runner.invoke(app, ["recipe", package, "-o", str(out), "--force"]).exit_code == 0
    assert target.read_text() == printed.stdout
    assert not [p for p in out.iterdir() if p.name.startswith(".")], "no temporary files left behind"


def test_all_writes_nothing_when_one_file_would_be_clobbered(tmp_path) -> None:
    out = tmp_path / "pkgs"
    out.mkdir()
    mine = out / "pytorch-python313-cpu-avx2.nix"
    mine.write_text("# mine\n")
    result = runner.invoke(app, ["recipe", "--all", "-o", str(out)])
    assert result.exit_code == 2
    assert sorted(p.name for p in out.iterdir()) == ["pytorch-python313-cpu-avx2.nix"]


def test_a_symlink_in_the_target_is_not_written_through(tmp_path) -> None:
    out = tmp_path / "pkgs"
    out.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (out / "pytorch-python313-cpu-avx2.nix").symlink_to(outside)
    result = runner.invoke(app, ["recipe", "pytorch-python313-cpu-avx2", "-o", str(out), "--force"])
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert outside.read_text() == "keep\n"


@pytest.mark.parametrize("name", ["../../etc/passwd", "/tmp/x", "pytorch-python313-cuda13_0-sm121-avx2", "pytorch-python313-cuda13_0-sm61-avx2"])
def test_packages_not_in_the_catalog_are_refused(tmp_path, name) -> None:
    result = runner.invoke(app, ["recipe", name, "-o", str(tmp_path)])
    assert result.exit_code == 2 and "not a package of the catalog" in result.stderr
    assert list(tmp_path.iterdir()) == []
