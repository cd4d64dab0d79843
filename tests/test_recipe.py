from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import TESTS, cli_runner, require

from pickvariant.cli.main import app
from pickvariant.sources.flox.recipes.render import nix_string, render

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
runner = cli_runner()


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
    "main",
    "pytorch-2.8-python311",
    "pytorch-2.8-python312",
    "pytorch-2.9-python311",
    "pytorch-2.9-python313",
    "pytorch-2.9-vllm-0.14.0",
    "pytorch-2.9-vllm-0.15.1",
    "pytorch-2.10-python313",
]


CONTRACT = json.loads((NIX / "torch-contract.json").read_text())


def build_environment(got: dict, top: Path) -> dict[str, str]:
    """Run the recipe's preConfigure with bash as the builder would (derivation attributes in the
    environment, NIX_BUILD_TOP set, cuda_cccl laid out as nixpkgs lays it out for the CUDA
    release) and return the environment it leaves for setup.py."""
    script = got["preConfigure"]
    cccl = re.search(r"/nix/store/[0-9a-z]{32}-cuda_cccl-[0-9.]+", script)
    if cccl:
        tree = top / "cuda_cccl"
        for directory in got["fromNixpkgs"]["ccclIncludeDirs"]:
            (tree / "include" / directory).mkdir(parents=True, exist_ok=True)
            (tree / "include" / directory / "marker.h").write_text(directory)
        script = script.replace(cccl.group(0), str(tree))
    env = {**got["environment"], "NIX_BUILD_TOP": str(top), "PATH": os.environ["PATH"]}
    dump = top / "environment.0"
    result = subprocess.run(
        ["bash", "-c", f"{script}\nenv -0 > '{dump}'"], env=env, capture_output=True, text=True, timeout=60, cwd=top
    )
    assert result.returncode == 0, result.stderr
    return dict(item.split("=", 1) for item in dump.read_text().split("\0") if "=" in item)


def cmake_definitions(environment: dict[str, str]) -> dict[str, str]:
    """What setup.py passes CMake as -D: only environment variables, by its prefix rule (cmakeFlags never)."""
    rule = CONTRACT["setup_py_forwards"]
    return {
        name: value
        for name, value in environment.items()
        if name.startswith(tuple(rule["prefixes"])) or name in rule["names"]
    }


def evaluate(tmp_path: Path, files: dict[str, Path], pin_torch: dict[str, str]) -> dict:
    listing = tmp_path / "all.nix"
    names = " ".join(
        f'"{name}" = import {NIX / "eval-recipe.nix"} {{ recipe = {path}; torchVersion = "{pin_torch[name]}"; }};'
        for name, path in files.items()
    )
    listing.write_text("{ " + names + " }\n")
    return nix_eval(listing)


@pytest.mark.parametrize("branch", BRANCHES)
def test_every_recipe_parses_and_evaluates_to_what_the_catalog_says(tmp_path, catalog, branch) -> None:
    nix = nix_instantiate()
    out = write_branch(tmp_path, branch)
    variants = [v for v in catalog.branch(branch).variants if not v.is_mps]
    files = sorted(out.glob("*.nix"))
    assert [f.stem for f in files] == sorted(v.package for v in variants)
    parsed = subprocess.run([nix, "--parse", *map(str, files)], capture_output=True, text=True, timeout=300)
    assert parsed.returncode == 0, parsed.stderr
    results = evaluate(
        tmp_path,
        {v.package: out / f"{v.package}.nix" for v in variants},
        {v.package: catalog.nixpkgs_torch.get(v.nixpkgs_rev, "0.0.0") for v in variants},
    )
    for variant in variants:
        got = results[variant.package]
        isa = catalog.isas[variant.cpu_isa]
        line = catalog.cuda_line(variant)
        assert got["pname"] == variant.package and got["drvPath"].endswith(f"-{variant.package}-{variant.torch}.drv")
        assert got["version"] == variant.torch and got["environment"]["PYTORCH_BUILD_VERSION"] == variant.torch
        assert got["meta"]["platforms"] == [variant.platform]
        assert got["pickvariant"]["cpuFlags"] == list(isa.compiler_flags)
        assert got["fromNixpkgs"]["rev"] == variant.nixpkgs_rev and got["fromNixpkgs"]["system"] == variant.platform
        assert "allowBroken" not in got["fromNixpkgs"]["config"]
        top = tmp_path / "build" / variant.package
        top.mkdir(parents=True)
        environment = build_environment(got, top)
        cmake = cmake_definitions(environment)
        assert set(isa.compiler_flags) <= set(environment["CXXFLAGS"].split()) and set(isa.compiler_flags) <= set(
            environment["CFLAGS"].split()
        )
        build_env = {**(catalog.gpu_archs[variant.gpu_arch].build_env if variant.gpu_arch else {}), **isa.build_env}
        for name, value in build_env.items():
            assert environment[name] == value
        if variant.gpu_arch:
            arch = catalog.gpu_archs[variant.gpu_arch]
            capability = str(arch.compute_capability)
            assert got["overrideArgs"] == {"cudaSupport": True, "gpuTargets": [capability]}
            assert got["fromNixpkgs"]["cudaPackages"] == variant.cuda
            assert (
                got["fromNixpkgs"]["magmaCudaCapabilities"]
                == [capability]
                == got["fromNixpkgs"]["ncclCudaCapabilities"]
            )
            assert environment["TORCH_CUDA_ARCH_LIST"] == capability
            assert (
                cmake["CMAKE_CUDA_ARCHITECTURES"] == f"{arch.compute_capability.major}{arch.compute_capability.minor}"
            )
            assert cmake.get("USE_CUDNN", "1") == ("1" if variant.cudnn else "0")
            if variant.cuda.startswith("13."):
                compat = top / "cccl-compat"
                assert (
                    f"-I{compat}" in cmake["CMAKE_CUDA_FLAGS"].split()
                    and f"-I{compat}" in environment["CXXFLAGS"].split()
                )
                assert (compat / "cccl" / "cub" / "marker.h").read_text() in ("cub", "cccl/cub")
        else:
            assert got["overrideArgs"] == {"cudaSupport": False}
            assert cmake["USE_CUDA"] == "0"
        if catalog.nixpkgs_torch.get(variant.nixpkgs_rev) != variant.torch:
            source = catalog.torch_sources[variant.torch]
            assert (
                got["src"]["fetcher"] == "fetchFromGitHub"
                and got["src"]["rev"] == source.rev
                and got["src"]["hash"] == source.hash
            )
            kept = {name for name, keep, _ in source.nixpkgs_patches if keep}
            expected = {p["name"] for p in CONTRACT["patches"] if p["when"] == "linux" or variant.gpu_arch} & kept
            assert expected <= set(got["patches"]), "nixpkgs' own patches are kept across the source upgrade"
        else:
            assert got["src"]["fetcher"] == "nixpkgs-default"
        assert line is None or got["fromNixpkgs"]["cudaPackages"] == line.cuda
        assert "/build/" not in got["preConfigure"]


def test_the_cccl_links_follow_either_layout_and_stop_on_an_unknown_one(tmp_path, catalog) -> None:
    """nixpkgs flattens include/cccl/ into include/ for CUDA >= 13 (torch-contract.json); a pin
    without that fixup keeps CUDA's own layout. Both must give <cub/...> and <cccl/cub/...>."""
    nix_instantiate()
    variant = catalog.variant("pytorch-python313-cuda13_1-sm90-avx512", "pytorch-2.10-python313")
    recipe = tmp_path / "r.nix"
    recipe.write_text(render(variant, catalog))
    got = evaluate(tmp_path, {"r": recipe}, {"r": "2.9.1"})["r"]
    for layout in (["cub", "thrust", "cuda", "nv"], ["cccl/cub", "cccl/thrust", "cccl/cuda", "cccl/nv"]):
        top = tmp_path / layout[0].replace("/", "-")
        top.mkdir()
        environment = build_environment({**got, "fromNixpkgs": {**got["fromNixpkgs"], "ccclIncludeDirs": layout}}, top)
        include = environment["CMAKE_CUDA_FLAGS"].split()[-1].removeprefix("-I")
        assert (Path(include) / "cccl" / "cub" / "marker.h").exists()
        # Flattened, <cub/...> is found in cuda_cccl's own include/; unflattened, only through the links.
        assert (Path(include) / "cub" / "marker.h").exists() == layout[0].startswith("cccl/")
    top = tmp_path / "empty"
    top.mkdir()
    with pytest.raises(AssertionError, match="has neither include/cub nor include/cccl/cub"):
        build_environment({**got, "fromNixpkgs": {**got["fromNixpkgs"], "ccclIncludeDirs": ["other"]}}, top)


OLD_RECIPE = NIX / "old-pytorch-python313-cuda13_0-sm90-avx512.nix"


def nix_eval_error(recipe: Path, evaluator: str = "eval-recipe.nix") -> str:
    result = subprocess.run(
        [
            nix_instantiate(),
            "--eval",
            "--strict",
            "--json",
            str(NIX / evaluator),
            "--arg",
            "recipe",
            str(recipe),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0, "the stand-in accepted it"
    return result.stderr


def test_the_stand_in_refuses_what_nixpkgs_refuses(tmp_path, catalog) -> None:
    """The recipe pickvariant 0.3 generated (cmakeFlags, patches = [ ], no broken flag cleared) and
    single mistakes in a current one fail against the stand-in, as they would against nixpkgs."""
    assert "is marked as broken, refusing to evaluate" in nix_eval_error(OLD_RECIPE)
    current = render(catalog.variant("pytorch-python313-cuda13_0-sm90-avx512", "pytorch-2.10-python313"), catalog)
    mistakes = {
        "is marked as broken": current.replace("    broken = false;\n", ""),
        "called with unexpected argument 'cudaCapabilities'": current.replace(
            "  gpuTargets = [ gpuArchSM ];\n", "  gpuTargets = [ gpuArchSM ];\n  cudaCapabilities = [ gpuArchSM ];\n", 1
        ),
        "lib.fakeHash is a placeholder": current.replace(
            catalog.torch_sources["2.10.0"].hash, "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
        ),
    }
    for message, text in mistakes.items():
        assert text != current
        path = tmp_path / f"{len(message)}.nix"
        path.write_text(text)
        assert message in nix_eval_error(path)
    # With the broken flag allowed, the old recipe evaluates, and shows why it would still not build right.
    allowed = tmp_path / "old-allowed.nix"
    allowed.write_text(
        OLD_RECIPE.read_text().replace(
            "config = { allowUnfree = true; cudaSupport = true; };",
            "config = { allowUnfree = true; cudaSupport = true; allowBroken = true; };",
        )
    )
    old = evaluate(tmp_path, {"old": allowed}, {"old": "2.9.1"})["old"]
    assert "-DCMAKE_CUDA_FLAGS=-I/build/cccl-compat" in old["cmakeFlags"]
    top = tmp_path / "old-build"
    top.mkdir()
    # It wrote to a hard-coded /build (the sandbox's top directory on Linux): run it in a temporary one.
    assert "/build/cccl-compat" in old["preConfigure"]
    old_cmake = cmake_definitions(
        build_environment({**old, "preConfigure": old["preConfigure"].replace("/build/", f"{top}/")}, top)
    )
    assert (
        "CMAKE_CUDA_FLAGS" not in old_cmake and "TORCH_BUILD_VERSION" not in old_cmake
    )  # the -D flags reached nothing
    assert old["fromNixpkgs"]["magmaCudaCapabilities"] == CONTRACT["cuda_capabilities_default"]  # MAGMA for every GPU
    assert not {"fix-cmake-cuda-toolkit.patch", "pytorch-pr-108847.patch"} & set(
        old["patches"]
    )  # nixpkgs' patches dropped
    assert (
        list((top / "cccl-compat").iterdir()) == []
    )  # its links looked for include/cccl/, which nixpkgs flattened away


def test_an_mps_build_is_not_generated_but_pointed_to_the_build_repository(catalog) -> None:
    result = runner.invoke(app, ["recipe", "pytorch-python313-darwin-mps", "--generate", "--branch", "main"])
    assert (
        result.exit_code == 2
        and "pickvariant recipe pytorch-python313-darwin-mps --branch main` (without --generate)" in result.stderr
    )


def test_cuda12_recipe_warns_when_the_pin_has_another_torch(tmp_path, catalog) -> None:
    nix = nix_instantiate()
    out = tmp_path / "r.nix"
    out.write_text(render(catalog.variant("pytorch-python313-cuda12_9-sm90-avx2", "pytorch-2.9-python313"), catalog))
    result = subprocess.run(
        [
            nix,
            "--eval",
            "--strict",
            "--json",
            str(NIX / "eval-recipe.nix"),
            "--arg",
            "recipe",
            str(out),
            "--argstr",
            "torchVersion",
            "2.7.1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
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


@pytest.mark.parametrize(
    "value", ["plain", 'quote " and backslash \\', '${builtins.abort "injected"}', "new\nline\ttab $HOME ''", "\\${x}"]
)
def test_nix_strings_hold_exactly_the_value(tmp_path, value) -> None:
    expression = tmp_path / "s.nix"
    expression.write_text(nix_string(value) + "\n")
    assert nix_eval(expression) == value


def test_recipe_prints_to_stdout_and_writes_atomically_without_clobbering(tmp_path) -> None:
    package = "pytorch-python313-cuda13_1-sm89-avx2"
    printed = runner.invoke(app, ["recipe", package, "--generate"])
    assert printed.exit_code == 0 and printed.stdout.startswith("# PyTorch 2.10.0")
    out = tmp_path / "pkgs"
    assert runner.invoke(app, ["recipe", package, "--generate", "-o", str(out)]).exit_code == 0
    target = out / f"{package}.nix"
    assert target.read_text() == printed.stdout
    again = runner.invoke(app, ["recipe", package, "--generate", "-o", str(out)])
    assert again.exit_code == 0 and "unchanged" in again.stdout
    target.write_text("# my own edits\n")
    refused = runner.invoke(app, ["recipe", package, "--generate", "-o", str(out)])
    assert refused.exit_code == 2 and str(target) in refused.stderr
    assert target.read_text() == "# my own edits\n"
    assert runner.invoke(app, ["recipe", package, "--generate", "-o", str(out), "--force"]).exit_code == 0
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
    result = runner.invoke(
        app, ["recipe", "pytorch-python313-cpu-avx2", "--generate", "--branch", "main", "-o", str(out), "--force"]
    )
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert outside.read_text() == "keep\n"


@pytest.mark.parametrize(
    "name",
    ["../../etc/passwd", "/tmp/x", "pytorch-python313-cuda13_0-sm121-avx2", "pytorch-python313-cuda13_0-sm61-avx2"],
)
def test_packages_not_in_the_catalog_are_refused(tmp_path, name) -> None:
    result = runner.invoke(app, ["recipe", name, "--generate", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "not a package of the catalog" in result.stderr
    assert list(tmp_path.iterdir()) == []


COMPANION_CASES = [
    # (variant, branch, projects): nixpkgs' own torch at the pin; a source-upgraded torch (vLLM cannot be on it);
    # a CPU-only build (nor on it).
    ("pytorch-python313-cuda12_9-sm90-avx512", "pytorch-2.9-python313", ("torchvision", "torchaudio", "vllm")),
    ("pytorch-python313-cuda13_1-sm90-avx512", "pytorch-2.10-python313", ("torchvision", "torchaudio")),
    ("pytorch-python313-cpu-avx2", "pytorch-2.9-python313", ("torchvision", "torchaudio")),
]


@pytest.mark.parametrize(("package", "branch", "projects"), COMPANION_CASES)
def test_recipe_with_writes_companions_that_build_on_the_variants_own_torch(
    tmp_path, catalog, package, branch, projects
) -> None:
    """Each generated companion parses with the real nix-instantiate and, evaluated as Flox calls a recipe against
    the stand-in nixpkgs, takes the very torch derivation of the variant's recipe beside it: one torch."""
    nix = nix_instantiate()
    out = tmp_path / "pkgs"
    done = runner.invoke(
        app, ["recipe", package, "--branch", branch, "--generate", "--with", ",".join(projects), "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    variant = catalog.variant(package, branch)
    names = [project + package.removeprefix("pytorch") for project in projects]
    assert sorted(f.stem for f in out.glob("*.nix")) == sorted([package, *names])
    parsed = subprocess.run([nix, "--parse", *(str(out / f"{n}.nix") for n in names)], capture_output=True, timeout=120)
    assert parsed.returncode == 0, parsed.stderr
    pin_torch = catalog.nixpkgs_torch.get(variant.nixpkgs_rev, "0.0.0")
    own = nix_eval(NIX / "eval-recipe.nix", recipe=str(out / f"{package}.nix"), torchVersion=f'"{pin_torch}"')
    isa = catalog.isas[variant.cpu_isa]
    for name in names:
        got = nix_eval(NIX / "eval-companion.nix", recipe=str(out / f"{name}.nix"), torchVersion=f'"{pin_torch}"')
        assert got["pname"] == name and got["pickvariant"]["variant"] == package
        assert got["torch"] == got["variantTorch"] == {"pname": package, "drvPath": own["drvPath"]}
        assert got["pickvariant"]["cpuFlags"] == list(isa.compiler_flags)
        assert got["pickvariant"]["nixpkgsRev"] == variant.nixpkgs_rev and got["platforms"] == [variant.platform]
        if variant.gpu_arch is None:
            assert "TORCH_CUDA_ARCH_LIST" not in got["preConfigure"] and got["pickvariant"]["gpuArchSM"] is None
        else:
            capability = catalog.gpu_archs[variant.gpu_arch].compute_capability
            assert f'export TORCH_CUDA_ARCH_LIST="{capability}"' in got["preConfigure"]


@pytest.mark.parametrize(
    ("edit", "refusal"),
    [
        ("{ inherit torch; }", "called with unexpected argument 'pytorch'"),
        ("python313Packages.torchvision.override", "attribute 'torchvison' missing"),
    ],
)
def test_the_nixpkgs_stand_in_refuses_a_companion_nixpkgs_would_refuse(tmp_path, edit, refusal) -> None:
    """A torch input nixpkgs' expression does not take, or an attribute the Python set does not have, fails the
    evaluation as it would with nixpkgs: the stand-in holds generated recipes to what nixpkgs accepts."""
    out = tmp_path / "pkgs"
    package = "pytorch-python313-cuda12_9-sm90-avx512"
    done = runner.invoke(
        app,
        ["recipe", package, "--branch", "pytorch-2.9-python313", "--generate", "--with", "torchvision", "-o", str(out)],
    )
    assert done.exit_code == 0, done.output
    recipe = out / ("torchvision" + package.removeprefix("pytorch") + ".nix")
    text = recipe.read_text()
    assert edit in text
    wrong = "{ pytorch = torch; }" if edit.startswith("{") else "python313Packages.torchvison.override"
    recipe.write_text(text.replace(edit, wrong))
    said = nix_eval_error(recipe, "eval-companion.nix")  # exits non-zero, or the helper fails
    assert refusal in said, said


def test_recipe_with_says_why_a_companion_cannot_be_generated_and_needs_a_directory(tmp_path) -> None:
    cpu = runner.invoke(
        app,
        [
            "recipe",
            "pytorch-python313-cpu-avx2",
            "--branch",
            "pytorch-2.9-python313",
            "--generate",
            "--with",
            "vllm",
            "-o",
            str(tmp_path),
        ],
    )
    assert cpu.exit_code == 2
    assert cpu.stderr.startswith(
        "pickvariant: --with: no vllm recipe can be generated on it: vllm is generated only for CUDA builds"
    )
    upgraded = runner.invoke(
        app, ["recipe", "pytorch-python313-cuda13_1-sm90-avx512", "--generate", "--with", "vllm", "-o", str(tmp_path)]
    )
    assert upgraded.exit_code == 2 and "upgrades nixpkgs 2017d6d's torch to 2.10.0" in upgraded.stderr
    nowhere = runner.invoke(
        app,
        [
            "recipe",
            "pytorch-python313-cpu-avx2",
            "--branch",
            "pytorch-2.9-python313",
            "--generate",
            "--with",
            "torchvision",
        ],
    )
    assert nowhere.exit_code == 2 and "give the directory with -o DIR" in nowhere.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written where anything was refused
