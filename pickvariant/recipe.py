"""Rendering a variant's Nix recipe from the templates in recipes/: a pure function of variant and catalog."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pickvariant import __version__
from pickvariant.catalog import Catalog, Variant
from pickvariant.errors import BadInput
from pickvariant.fsutil import check_output_dir, check_writable, write_atomic

_PACKAGE_DIR = Path(__file__).resolve().parent
_PLACEHOLDER = re.compile(r"@@([A-Za-z]+)@@")


def templates_dir() -> Path:
    installed = _PACKAGE_DIR / "recipes"
    return installed if installed.is_dir() else _PACKAGE_DIR.parent / "recipes"


def nix_string(value: str) -> str:
    """A Nix double-quoted string literal holding exactly `value`."""
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("${", "\\${")
        .replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    )
    return f'"{escaped}"'


def nix_list(values: tuple[str, ...] | list[str]) -> str:
    return "[ " + " ".join(nix_string(value) for value in values) + " ]"


def nix_attrs(values: dict[str, str]) -> str:
    if not values:
        return "{ }"
    return "{ " + " ".join(f"{name} = {nix_string(value)};" for name, value in sorted(values.items())) + " }"


def _comment(text: str) -> str:
    return " ".join(text.split())


def template_for(variant: Variant, catalog: Catalog) -> str:
    return "cpu" if variant.gpu_arch is None else catalog.branch(variant.branch).recipe


def render(variant: Variant, catalog: Catalog) -> str:
    branch = catalog.branch(variant.branch)
    isa = catalog.isas[variant.cpu_isa]
    arch = catalog.gpu_archs[variant.gpu_arch] if variant.gpu_arch else None
    system = catalog.nix_systems[isa.platform]
    build_env = {**(arch.build_env if arch else {}), **isa.build_env}
    gpu_text = f"{arch.description}" if arch else "CPU only"
    title = f"PyTorch {branch.torch} for {gpu_text} + {isa.description}"
    long_description = "\n".join([
        "Custom PyTorch build with targeted optimizations:",
        f"- GPU: {arch.description} ({arch.name}, compute capability {arch.compute_capability})" if arch else "- GPU: none (CPU-only build)",
        f"- CPU: {isa.description} ({' '.join(isa.compiler_flags)})",
        f"- CUDA: {branch.cuda}" if arch else "- CUDA: disabled",
        f"- Python: {catalog.python_version}",
    ]) + "\n"
    values = {
        "title": _comment(title),
        "package": nix_string(variant.package),
        "packageComment": _comment(variant.package),
        "torchComment": _comment(branch.torch),
        "cudaComment": _comment(branch.cuda),
        "branch": _comment(branch.name),
        "torch": nix_string(branch.torch),
        "cuda": nix_string(branch.cuda),
        "pickvariantVersion": __version__,
        "nixpkgsRev": nix_string(branch.nixpkgs_rev),
        "gpuArchSM": nix_string(str(arch.compute_capability)) if arch else "null",
        "gpuArchNum": nix_string(f"{arch.compute_capability.major}{arch.compute_capability.minor}") if arch else "null",
        "isaDescription": _comment(f"{isa.description}, needs /proc/cpuinfo flags {' '.join(isa.requires)}"),
        "cpuFlags": nix_list(isa.compiler_flags),
        "buildEnv": nix_attrs(build_env),
        "system": nix_string(system),
        "cudaPackages": branch.cuda_packages,
        "pythonPackages": catalog.python_packages_attr,
        "pname": nix_string(branch.pname_prefix + variant.package.removeprefix("pytorch")),
        "description": nix_string(f"PyTorch {branch.torch} for {gpu_text} with {isa.description}"),
        "longDescription": nix_string(long_description),
    }
    source = branch.torch_source
    if source is not None:
        values |= {
            "srcOwner": nix_string(source.owner),
            "srcRepo": nix_string(source.repo),
            "srcRev": nix_string(source.rev),
            "srcFetchSubmodules": "true" if source.fetch_submodules else "false",
            "srcHash": nix_string(source.hash) if source.hash else "lib.fakeHash",
            "srcHashComment": "# Hash from catalog.json." if source.hash else "# " + _comment(
                f"NO REAL HASH YET: lib.fakeHash is a placeholder, so the first build fails and prints the real one ('got: sha256-...'). {source.hash_note}"
            ),
        }
    template = (templates_dir() / f"{template_for(variant, catalog)}.nix").read_text(encoding="utf-8")

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise BadInput(f"recipe template {template_for(variant, catalog)}.nix needs {name!r}, which branch {branch.name} does not provide")
        return values[name]

    return _PLACEHOLDER.sub(substitute, template)


@dataclass(frozen=True)
class Written:
    path: Path
    changed: bool


def recipe_path(directory: Path, variant: Variant) -> Path:
    # The package name comes from the catalog, whose schema allows no "/" or ".." in it;
    # write_recipes still checks that the file lands inside `directory`.
    return directory / f"{variant.package}.nix"


def write_recipes(directory: Path, variants: list[Variant], catalog: Catalog, force: bool) -> list[Written]:
    """Write every recipe, or none: all clobber checks run before the first write."""
    check_output_dir(directory)
    rendered = [(recipe_path(directory, variant), render(variant, catalog)) for variant in variants]
    needed = [(path, text, check_writable(path, text, force, root=directory)) for path, text in rendered]
    for path, text, must_write in needed:
        if must_write:
            write_atomic(path, text)
    return [Written(path, must_write) for path, _, must_write in needed]
