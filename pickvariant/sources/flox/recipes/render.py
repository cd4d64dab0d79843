"""Rendering a variant's Nix recipe from the templates (the checkout's recipes/, carried inside a wheel): a pure
function of variant and catalog."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pickvariant import __version__
from pickvariant._base.errors import BadInput
from pickvariant._base.files import check_output_dir, check_writable, shipped, write_atomic
from pickvariant._base.records import record
from pickvariant.sources.build import Catalog, Companion, Variant, checked_identifier, checked_package
from pickvariant.sources.flox.recipes import generated
from pickvariant.sources.hardware import TorchSource

TEMPLATES_DIR = Path(shipped("sources/flox/recipes/templates", "recipes"))
_PLACEHOLDER = re.compile(r"@@([A-Za-z]+)@@")


def nix_string(value: str) -> str:
    """A Nix double-quoted string literal holding exactly `value`."""
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("${", "\\${")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def nix_list(values: tuple[str, ...] | list[str]) -> str:
    return "[ " + " ".join(nix_string(value) for value in values) + " ]"


def nix_attrs(values: dict[str, str]) -> str:
    if not values:
        return "{ }"
    return (
        "{ "
        + " ".join(
            f"{checked_identifier(name, 'build variable')} = {nix_string(value)};"
            for name, value in sorted(values.items())
        )
        + " }"
    )


def _comment(text: str) -> str:
    return " ".join(text.split())


def template_for(variant: Variant) -> str:
    if variant.is_mps:
        raise BadInput(
            f"{variant.package} is an Apple MPS build: pickvariant has no template for it; "
            f"fetch the build repository's own with `{shlex.join(['pickvariant', 'recipe', variant.package, '--branch', variant.branch])}` (without --generate)"
        )
    if variant.cuda is None:
        return "cpu"
    return "cuda13" if variant.cuda.split(".")[0] == "13" else "cuda12"


def _torch_overlay(variant: Variant, catalog: Catalog, python_attr: str) -> str:
    """The overlay that swaps nixpkgs' torch source for the variant's release, or nothing when the pin has it."""
    if catalog.nixpkgs_torch.get(variant.nixpkgs_rev) == variant.torch:
        return "      # nixpkgs at this pin has PyTorch " + variant.torch + ": no source upgrade"
    source = catalog.torch_sources.get(variant.torch)
    if source is None:
        raise BadInput(
            f"{variant.package} ({variant.branch}) needs PyTorch {variant.torch} on nixpkgs {variant.nixpkgs_rev[:12]}, "
            "and hardware.json has no source hash for it (torch_sources): use the build repository's recipe"
        )
    return f"""      # PyTorch source upgrade to {variant.torch}; hash: {_comment(source.source)}
      (final: prev: {{
        {python_attr} = prev.{python_attr}.override {{
          overrides = pfinal: pprev: {{
            torch = pprev.torch.overrideAttrs (oldAttrs: {{
              version = {nix_string(variant.torch)};
              src = prev.fetchFromGitHub {{
                owner = {nix_string(source.owner)};
                repo = {nix_string(source.repo)};
                rev = {nix_string(source.rev)};
                fetchSubmodules = {"true" if source.fetch_submodules else "false"};
                hash = {nix_string(source.hash)};
              }};
{_patches(source)}
            }});
          }};
        }};
      }})"""


def _patches(source: TorchSource) -> str:
    """Keep nixpkgs' own torch patches across the source upgrade, dropping only those the facts say no longer apply."""
    lines = [f"              # nixpkgs' own torch patches, from {_comment(source.nixpkgs_patches_source)}"]
    lines += [
        f"              #   {'keeps' if keep else 'drops'} {name}: {_comment(why)}"
        for name, keep, why in source.nixpkgs_patches
    ]
    dropped = source.dropped_patches
    if not dropped:
        lines.append("              # (patches is left as nixpkgs has it)")
    else:
        lines.append(
            f"              patches = builtins.filter (patch: !(builtins.elem (baseNameOf (toString patch)) {nix_list(dropped)})) (oldAttrs.patches or [ ]);"
        )
    return "\n".join(lines)


def render(variant: Variant, catalog: Catalog) -> str:
    template_name = template_for(variant)
    assert variant.cpu_isa is not None
    isa = catalog.isas[variant.cpu_isa]
    arch = catalog.gpu_archs[variant.gpu_arch] if variant.gpu_arch else None
    line = catalog.cuda_line(variant)
    python_attr = f"python{variant.python.replace('.', '')}Packages"
    build_env = {**(arch.build_env if arch else {}), **isa.build_env}
    if arch and variant.cudnn is False:
        build_env["USE_CUDNN"] = "0"
    gpu_text = f"{arch.description}" if arch else "CPU only"
    title = f"PyTorch {variant.torch} for {gpu_text} + {isa.description}"
    long_description = (
        "\n".join(
            [
                "Custom PyTorch build with targeted optimizations:",
                f"- GPU: {arch.description} ({arch.name}, compute capability {arch.compute_capability})"
                if arch
                else "- GPU: none (CPU-only build)",
                f"- CPU: {isa.description} ({' '.join(isa.compiler_flags)})",
                f"- CUDA: {variant.cuda}" if variant.cuda else "- CUDA: disabled",
                f"- Python: {variant.python}",
            ]
        )
        + "\n"
    )
    values = {
        "title": _comment(title),
        "package": nix_string(variant.package),
        "packageComment": _comment(variant.package),
        "torchComment": _comment(variant.torch),
        "cudaComment": _comment(variant.cuda or "none"),
        "branch": _comment(f"{variant.branch} of {catalog.source.repo} at {catalog.source.commit[:12]}"),
        "torch": nix_string(variant.torch),
        "cuda": nix_string(variant.cuda or ""),
        "pickvariantVersion": __version__,
        "catalogComment": _comment(
            f"the catalog {catalog.path.name} synced from {catalog.source.repo} at {catalog.source.commit[:12]}"
        ),
        "nixpkgsRev": nix_string(variant.nixpkgs_rev),
        "gpuArchSM": nix_string(str(arch.compute_capability)) if arch else "null",
        "gpuArchNum": nix_string(f"{arch.compute_capability.major}{arch.compute_capability.minor}") if arch else "null",
        "isaDescription": _comment(f"{isa.description}, needs /proc/cpuinfo flags {' '.join(isa.requires)}"),
        "cpuFlags": nix_list(isa.compiler_flags),
        "buildEnv": nix_attrs(build_env),
        "system": nix_string(variant.platform),
        "cudaPackages": checked_identifier(line.cuda_packages, "CUDA package set") if line else "cudaPackages",
        "pythonPackages": checked_identifier(python_attr, "Python package set"),
        "pname": nix_string(variant.package),
        "description": nix_string(f"PyTorch {variant.torch} for {gpu_text} with {isa.description}"),
        "longDescription": nix_string(long_description),
        "torchOverlay": _torch_overlay(variant, catalog, python_attr),
    }
    return _fill(template_name, values)


def _fill(template_name: str, values: dict[str, str]) -> str:
    template = (TEMPLATES_DIR / f"{template_name}.nix").read_text(encoding="utf-8")

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise BadInput(f"recipe template {template_name}.nix needs {name!r}, which pickvariant does not provide")
        return values[name]

    return _PLACEHOLDER.sub(substitute, template)


def render_companion(companion: Companion, variant: Variant, catalog: Catalog) -> str:
    """The recipe of a companion generated on `variant`: nixpkgs' expression of the project at the variant's pin,
    given the torch of the variant's own recipe (imported from beside it), built for its GPU target and CPU flags."""
    spec = generated.projects()[companion.project]
    if companion.torch_relation != "generated" or companion.torch_of != variant.package:
        raise BadInput(f"{companion.package} is not generated on {variant.package}: only generated companions render")
    assert variant.cpu_isa is not None or variant.is_mps
    isa = catalog.isas[variant.cpu_isa] if variant.cpu_isa else None
    arch = catalog.gpu_archs[variant.gpu_arch] if variant.gpu_arch and not variant.is_mps else None
    line = catalog.cuda_line(variant)
    python = checked_identifier(f"python{variant.python.replace('.', '')}", "Python")
    attribute = checked_identifier(spec.attribute, "nixpkgs attribute")
    if spec.torch_by == "override":
        base = f"(pkgs.{python}Packages.{attribute}.override {{ inherit torch; }})"
        by = f"nixpkgs' {attribute} given the variant's torch through its `torch` argument"
    else:
        base = f"(pkgs.{python}.override {{ packageOverrides = self: super: {{ inherit torch; }}; }}).pkgs.{attribute}"
        by = f"the whole Python set with the variant's torch in place of nixpkgs' (what {attribute} and its dependencies build against)"
    cuda = arch is not None and line is not None
    config = (
        "{ allowUnfree = true; cudaSupport = true; cudaCapabilities = [ gpuArchSM ]; }"
        if cuda
        else "{ cudaSupport = false; }"
    )
    overlay = (
        f"      (final: prev: {{ cudaPackages = final.{checked_identifier(line.cuda_packages, 'CUDA package set')}; }})"
        if cuda and line is not None
        else "      # no CUDA"
    )
    what = f"{arch.description} + {isa.description}" if arch and isa else isa.description if isa else "Apple MPS"
    values = {
        "title": _comment(f"{companion.project} on PyTorch {variant.torch} for {what}"),
        "package": nix_string(companion.package),
        "packageComment": _comment(companion.package),
        "variant": nix_string(variant.package),
        "variantComment": _comment(f"{variant.package} (branch {variant.branch}: PyTorch {variant.torch})"),
        "variantFile": f"{checked_package(variant.package)}.nix",
        "variantFileComment": _comment(f"{variant.package}.nix"),
        "pickvariantVersion": __version__,
        "catalogComment": _comment(
            f"the catalog {catalog.path.name} synced from {catalog.source.repo} at {catalog.source.commit[:12]}"
        ),
        "nixpkgsRev": nix_string(variant.nixpkgs_rev),
        "isaDescription": _comment(
            f"{isa.description}, needs /proc/cpuinfo flags {' '.join(isa.requires)}" if isa else "Apple Silicon"
        ),
        "gpuArchSM": nix_string(str(arch.compute_capability)) if arch else "null",
        "cpuFlags": nix_list(isa.compiler_flags if isa else ()),
        "cudaEnv": nix_attrs(dict(spec.cuda_env) if cuda else {}),
        "system": nix_string(variant.platform),
        "nixpkgsConfig": config,
        "cudaOverlay": overlay,
        "torchByComment": _comment(f"{by}; {spec.source}"),
        "companionBase": base,
        "pname": nix_string(companion.package),
        "description": nix_string(f"{companion.project} built on {variant.package} (PyTorch {variant.torch})"),
    }
    return _fill("companion", values)


@record
class Written:
    path: Path
    changed: bool


def branch_variants(
    catalog: Catalog, branch: str | None, cuda: str | None, output: Path | None
) -> tuple[list[Variant], list[str]]:
    """The variants `recipe --all` renders (a branch's, of one CUDA line if given) and a line for each it cannot."""
    if output is None:
        raise BadInput("--all writes one file per variant: give the directory with -o DIR")
    if branch is None:
        raise BadInput(
            f"--all renders one branch: name it with --branch ({', '.join(b.name for b in catalog.branches)})"
        )
    variants = [v for v in catalog.branch(branch).variants if cuda is None or v.cuda == cuda]
    if not variants:
        raise BadInput(f"branch {branch} has no CUDA {cuda} line")
    skipped = [
        f"skipped {variant.package}: an MPS build has no template; fetch it with `{shlex.join(['pickvariant', 'recipe', variant.package, '--branch', variant.branch])}`"
        for variant in variants
        if variant.is_mps
    ]
    return [v for v in variants if not v.is_mps], skipped


def recipe_path(directory: Path, variant: Variant | Companion) -> Path:
    # The package name comes from a catalog, which may be one nobody checked: it is checked here, and
    # write_recipes still checks that the file lands inside `directory`.
    return directory / f"{checked_package(variant.package)}.nix"


def write_recipes(directory: Path, recipes: list[tuple[Variant | Companion, str]], force: bool) -> list[Written]:
    """Write every recipe, or none: all clobber checks run before the first write."""
    check_output_dir(directory)
    rendered = [(recipe_path(directory, variant), text) for variant, text in recipes]
    needed = [(path, text, check_writable(path, text, force, root=directory)) for path, text in rendered]
    for path, text, must_write in needed:
        if must_write:
            write_atomic(path, text)
    return [Written(path, must_write) for path, _, must_write in needed]
