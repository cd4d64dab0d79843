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
    ("pytorch-python313-cuda13_0-sm90-avx512", "pytorch-2.10-python313"),
    ("pytorch-python313-cuda13_1-sm121-armv9", "pytorch-2.10-python313"),
    ("pytorch-python313-cpu-avx2", "pytorch-2.10-python313"),
    ("pytorch-python313-cuda12_9-sm61-avx", "pytorch-2.10-python313"),
    ("pytorch-python313-cuda12_8-sm89-avx512vnni", "main"),
    ("pytorch-python311-cuda12_9-sm70-avx2", "pytorch-2.9-python311"),
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


BRANCHES = [
    "main", "pytorch-2.8-python311", "pytorch-2.8-python312", "pytorch-2.9-python311", "pytorch-2.9-python313",
    "pytorch-2.9-vllm-0.14.0", "pytorch-2.9-vllm-0.15.1", "pytorch-2.10-python313",
]


@pytest.mark.parametrize("branch", BRANCHES)
def test_every_recipe_parses_and_evaluates_to_what_the_catalog_says(tmp_path, catalog, branch) -> None:
    nix = nix_instantiate()
    out = write_branch(tmp_path, branch)
    variants = [v for v in catalog.branch(branch).variants if not v.is_mps]
    files = sorted(out.glob("*.nix"))
    assert [f.stem for f in files] == sorted(v.package for v in variants)
    parsed = subprocess.run([nix, "--parse", *map(str, files)], capture_output=True, text=True, timeout=300)
    assert parsed.returncode == 0, parsed.stderr
    listing = tmp_path / f"all-{branch}.nix"
    pin_torch = {v.nixpkgs_rev: catalog.nixpkgs_torch.get(v.nixpkgs_rev, "0.0.0") for v in variants}
    names = " ".join(
        f'"{v.package}" = import {NIX / "eval-recipe.nix"} {{ recipe = {out / (v.package + ".nix")}; torchVersion = "{pin_torch[v.nixpkgs_rev]}"; }};'
        for v in variants
    )
    listing.write_text("{ " + names + " }\n")
    results = nix_eval(listing)
    for variant in variants:
        got = results[variant.package]
        isa = catalog.isas[variant.cpu_isa]
        line = catalog.cuda_line(variant)
        assert got["pname"] == variant.package
        assert got["version"] == variant.torch
        assert got["meta"]["platforms"] == [variant.platform]
        assert got["pickvariant"]["cpuFlags"] == list(isa.compiler_flags)
        flags = " ".join(isa.compiler_flags)
        assert f'export CXXFLAGS="$CXXFLAGS {flags}"' in got["preConfigure"]
        assert got["fromNixpkgs"]["rev"] == variant.nixpkgs_rev and got["fromNixpkgs"]["system"] == variant.platform
        build_env = {**(catalog.gpu_archs[variant.gpu_arch].build_env if variant.gpu_arch else {}), **isa.build_env}
        for name, value in build_env.items():
            assert got["pickvariant"]["extraBuildEnv"][name] == value
        if variant.gpu_arch:
            arch = catalog.gpu_archs[variant.gpu_arch]
            assert got["overrideArgs"] == {"cudaSupport": True, "gpuTargets": [str(arch.compute_capability)]}
            assert got["fromNixpkgs"]["cudaPackages"] == variant.cuda
            assert got["pickvariant"]["extraBuildEnv"].get("USE_CUDNN", "1") == ("1" if variant.cudnn else "0")
        else:
            assert got["overrideArgs"] == {"cudaSupport": False}
        if pin_torch[variant.nixpkgs_rev] != variant.torch:
            source = catalog.torch_sources[variant.torch]
            assert got["src"]["fetcher"] == "fetchFromGitHub" and got["src"]["rev"] == source.rev and got["src"]["hash"] == source.hash
        else:
            assert got["src"]["fetcher"] == "nixpkgs-default"
        assert line is None or got["fromNixpkgs"]["cudaPackages"] == line.cuda


def test_an_mps_build_is_not_generated_but_pointed_to_the_build_repository(catalog) -> None:
    result = runner.invoke(app, ["recipe", "pytorch-python313-darwin-mps", "--branch", "main"])
    assert result.exit_code == 2 and ".flox/pkgs/pytorch-python313-darwin-mps.nix" in result.stderr


def test_cuda12_recipe_warns_when_the_pin_has_another_torch(tmp_path, catalog) -> None:
    nix = nix_instantiate()
    out = tmp_path / "r.nix"
    out.write_text(render(catalog.variant("pytorch-python313-cuda12_9-sm90-avx2", "pytorch-2.9-python313"), catalog))
    result = subprocess.run(
        [nix, "--eval", "--strict", "--json", str(NIX / "eval-recipe.nix"), "--arg", "recipe", str(out), "--argstr", "torchVersion", "2.7.1"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "the pinned nixpkgs has torch 2.7.1, the catalog expects 2.9.1" in result.stderr


def test_seed_000_verification_passes_on_the_cuda_13_matrix(tmp_path, catalog) -> None:
    """The plan's own shell checks (seed 000, Verification), adapted to the 59-variant matrix."""
    out = write_branch(tmp_path, "pytorch-2.10-python313")
    gpu = sorted(out.glob("pytorch-python313-cuda13_0-*.nix"))
    cpu = sorted(out.glob("pytorch-python313-cpu-*.nix"))
    assert (len(gpu), len(cpu)) == (60, 7)
    assert not list(out.glob("*-magma.nix")) and not list(out.glob("*-nightly.nix"))
    markers = re.compile(r'cudaPackages_13|cuda-13\.0-clockrate-fix\.patch|version = "2\.10\.0"')
    for path in gpu:
        assert sum(1 for line in path.read_text().splitlines() if markers.search(line)) == 3, path.name
    for path in cpu:
        text = path.read_text()
        assert sum(1 for line in text.splitlines() if 'version = "2.10.0"' in line) == 1, path.name
        assert "cudaPackages_13" not in text
    assert not [f for f in gpu + cpu if "fe5e41d7ffc0421f0913e8472ce6238ed0daf8e3" in f.read_text()]
    for arch in catalog.gpu_archs.values():
        files = list(out.glob(f"pytorch-python313-cuda13_0-{arch.name}-*.nix"))
        assert all(f'gpuArchSM = "{arch.compute_capability}";' in f.read_text() for f in files)
    assert len(list(out.glob("pytorch-python313-cuda13_0-sm121-*.nix"))) == 2


@pytest.mark.parametrize(("package", "branch"), GOLDEN_PACKAGES)
def test_golden_recipes(catalog, package, branch) -> None:
    """A template change shows up here as a readable diff; PICKVARIANT_UPDATE_GOLDEN=1 rewrites them."""
    text = render(catalog.variant(package, branch), catalog)
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
    package = "pytorch-python313-cuda13_1-sm89-avx2"
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
    result = runner.invoke(app, ["recipe", "--all", "--branch", "pytorch-2.10-python313", "-o", str(out)])
    assert result.exit_code == 2 and str(mine) in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["pytorch-python313-cpu-avx2.nix"]


def test_a_symlink_in_the_target_is_not_written_through(tmp_path) -> None:
    out = tmp_path / "pkgs"
    out.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (out / "pytorch-python313-cpu-avx2.nix").symlink_to(outside)
    result = runner.invoke(app, ["recipe", "pytorch-python313-cpu-avx2", "--branch", "main", "-o", str(out), "--force"])
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert outside.read_text() == "keep\n"


@pytest.mark.parametrize("name", ["../../etc/passwd", "/tmp/x", "pytorch-python313-cuda13_0-sm121-avx2", "pytorch-python313-cuda13_0-sm61-avx2"])
def test_packages_not_in_the_catalog_are_refused(tmp_path, name) -> None:
    result = runner.invoke(app, ["recipe", name, "-o", str(tmp_path)])
    assert result.exit_code == 2 and "not a package of the catalog" in result.stderr
    assert list(tmp_path.iterdir()) == []
