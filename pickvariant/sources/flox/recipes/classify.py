"""One recipe's facts, read from its own text: what `catalog sync` lists and what `recipe --repo` checks a fetched recipe by.

A recipe becomes a catalog row derived from its package name *and* its data (nixpkgs pin,
`cudaPackages_*`, `gpuTargets`, `cpuFlags`, `meta.platforms`, the PyTorch version,
`pythonNNNPackages`, `USE_CUDNN=0`); where the two disagree, or a fact is missing, the recipe is
unclassified, with the reason, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pickvariant._base.errors import BadInput
from pickvariant.sources.build import MPS
from pickvariant.sources.flox.recipes.declared import Declared, Reading, declared
from pickvariant.sources.flox.recipes.nixtext import NixText
from pickvariant.sources.hardware import CpuIsa, HardwareFacts

_NAME = re.compile(
    r"^pytorch-python(?P<py>3\d{1,2})-(?:"
    r"cpu-(?P<cpu_isa>[a-z0-9_]+)"
    r"|cuda(?P<cuda>\d+_\d+)-(?P<sm>sm\d+)-(?P<isa>[a-z0-9_]+)"
    r"|darwin-(?P<mps>mps))$"
)
NIXPKGS_PIN = re.compile(r"github\.com/NixOS/nixpkgs/archive/([0-9a-f]{40})\.tar\.gz")
CUDA_SET = re.compile(r"cudaPackages_(\d+(?:_\d+)?)")  # a name in the code, read whole
_PYTHON_SET = re.compile(r"(python3\d*)Packages")  # a name in the code, read whole
RELEASE = re.compile(r"^\d+\.\d+\.\d+$")


_FAT = re.compile(r"^pytorch-python3\d{1,2}-cuda\d+_\d+-all-")
_OPTION = re.compile(r"-(nomagma)$")


def _unread_name(package: str) -> str:
    """Why a recipe's name is left out: a fat build, a build option, or a name of no known shape."""
    if _FAT.match(package):
        return (
            "a build for every SM its recipe lists ('all'): pickvariant decides per GPU architecture, so it is left out"
        )
    option = _OPTION.search(package)
    if option and _NAME.match(package[: option.start()]):
        return f"a build option ({option[1]}): PyTorch variants are read without options, so it is left out"
    return "the package name does not read as pytorch-pythonNNN-(cpu-ISA | cudaX_Y-smNN-ISA | darwin-mps)"


def name_refusal(package: str) -> str | None:
    """Why a PyTorch recipe's name alone leaves it out, or None."""
    return None if _NAME.match(package) else _unread_name(package)


class RecipeClassifier:
    """Reads one recipe's facts against the hardware facts (a synced catalog's, or hardware.json's for sync)."""

    def __init__(self, facts: HardwareFacts) -> None:
        self.facts = facts

    def system_for(self, os_name: str, arch: str) -> str:
        for platform in self.facts.platforms.values():
            if platform.os == os_name and platform.arch == arch:
                return str(platform.nix_system)
        raise BadInput(f"hardware facts have no {os_name}/{arch} platform")

    def classify(
        self, branch: str, path: str, package: str, reading: Reading
    ) -> tuple[dict[str, Any] | None, str | None, list[str]]:
        """(row, None, notes) for a classified recipe, else (None, why, notes). The recipe's trust is settled before
        (trusted.py): its declared values are taken for what the upstream means by them."""
        notes: list[str] = []
        name = _NAME.match(package)
        if name is None:
            return None, _unread_name(package), notes
        recipe = reading.nix
        values = declared(recipe)
        if isinstance(values, str):
            return None, values, notes
        python = f"3.{name['py'][1:]}"
        pin, why = _nixpkgs_pin(recipe)
        why = why or _python_set_refusal(recipe, name["py"])
        if why or pin is None:
            return None, why, notes
        torch, why = self._torch_version(recipe, pin)
        if why or torch is None:
            return None, why, notes
        platforms = recipe.list_binding("platforms")
        if not platforms or len(platforms) != 1:
            return None, "meta.platforms is not one literal list of systems", notes
        listed = platforms[0]
        if name["mps"]:
            if values.flags or values.targets:
                return None, "a darwin-mps recipe whose build passes compiler flags or CUDA GPU targets", notes
            return self._mps(recipe, pin, torch, python, listed, branch, path, package, notes)
        return self._linux(
            recipe,
            values,
            name,
            listed,
            {"branch": branch, "package": package, "path": path, "torch": torch, "python": python, "nixpkgs_rev": pin},
            notes,
        )

    def _torch_version(self, recipe: NixText, pin: str) -> tuple[str | None, str | None]:
        """The PyTorch the recipe builds: its own `version`, else the torch of its nixpkgs pin; or why not known."""
        bound_versions = recipe.string_binding("version")
        if bound_versions is None:
            return None, "a version binding is not a string literal, so the PyTorch version is not certain"
        versions = sorted({v for v in bound_versions if RELEASE.match(v)})
        if len(versions) > 1:
            return None, f"several PyTorch versions: {', '.join(versions)}"
        torch = versions[0] if versions else self.facts.nixpkgs_torch.get(pin)
        if torch is None:
            return None, (
                f"PyTorch version unknown: the recipe keeps nixpkgs' torch, and hardware.json's nixpkgs_pins "
                f"does not give the torch of nixpkgs {pin[:12]}"
            )
        return torch, None

    def _linux(
        self,
        recipe: NixText,
        values: Declared,
        name: re.Match[str],
        listed: list[str],
        known: dict[str, Any],
        notes: list[str],
    ) -> tuple[dict[str, Any] | None, str | None, list[str]]:
        """A Linux recipe's row: its instruction set proven, its system listed, then CPU-only or its CUDA part."""
        isa_name = name["cpu_isa"] or name["isa"]
        isa = self.facts.isas.get(isa_name)
        if isa is None:
            return None, f"unknown CPU instruction set {isa_name!r} (not in hardware.json cpu_isas)", notes
        why = isa_disagreement(self.facts, values, isa)
        if why:
            return None, why, notes
        system = self.system_for("linux", isa.platform)
        if system not in listed:
            return None, f"meta.platforms {listed} lacks {system}, the only system {isa_name} runs on", notes
        extra = [s for s in listed if s != system]
        if extra:
            notes.append(
                f"{known['branch']}:{known['path']}: meta.platforms also lists {', '.join(extra)}, which cannot run {isa_name}; recorded as {system} only"
            )
        row = {
            "branch": known["branch"],
            "package": known["package"],
            "path": known["path"],
            "torch": known["torch"],
            "python": known["python"],
            "gpu_arch": None,
            "cpu_isa": isa_name,
            "cuda": None,
            "platform": system,
            "nixpkgs_rev": known["nixpkgs_rev"],
            "cudnn": False,
        }
        if name["cuda"] is None:
            stray = sorted(names_matching(CUDA_SET, recipe))
            if stray:
                return None, f"a CPU-only name, but the recipe uses cudaPackages_{stray[0]}", notes
            if values.targets:
                return None, f"a CPU-only name, but the recipe sets GPU targets ({_targets_shown(values)})", notes
            return row, None, notes
        return self._cuda(recipe, values, row, name["cuda"], name["sm"], isa, notes)

    def _cuda(
        self, recipe: NixText, values: Declared, row: dict[str, Any], tag: str, sm: str, isa: Any, notes: list[str]
    ) -> tuple[dict[str, Any] | None, str | None, list[str]]:
        cuda = tag.replace("_", ".")
        arch = self.facts.gpu_archs.get(sm)
        if arch is None:
            return None, f"unknown GPU architecture {sm} (not in hardware.json gpu_archs)", notes
        if cuda not in self.facts.cuda_releases:
            return None, f"no driver minimum is known for CUDA {cuda} (hardware.json cuda_releases)", notes
        if not arch.builds_with(cuda):
            return (
                None,
                f"{sm} cannot be built with CUDA {cuda} (nvcc supports it in {arch.min_cuda}..{arch.max_cuda or ''})",
                notes,
            )
        if not arch.has_host(isa.platform):
            return None, f"{sm} GPUs have no {isa.platform} host ({arch.description})", notes
        sets = sorted(names_matching(CUDA_SET, recipe))
        if len(sets) != 1 or sets[0] not in (tag, tag.split("_")[0]):
            found = ", ".join(f"cudaPackages_{s}" for s in sets) or "none"
            return None, f"the name says CUDA {cuda}, the recipe's CUDA package set is {found}", notes
        why = targets_disagreement(values, arch.sm_dotted, sm)
        if why:
            return None, why, notes
        cudnn_off = "0" in recipe.exports("USE_CUDNN")
        return (
            {**row, "gpu_arch": sm, "cuda": cuda, "cudnn": not cudnn_off, "_cuda_packages": f"cudaPackages_{sets[0]}"},
            None,
            notes,
        )

    def _mps(
        self,
        recipe: NixText,
        pin: str,
        torch: str,
        python: str,
        listed: list[str],
        branch: str,
        path: str,
        package: str,
        notes: list[str],
    ) -> tuple[dict[str, Any] | None, str | None, list[str]]:
        system = self.system_for("darwin", "aarch64")
        if listed != [system]:
            return None, f"a darwin-mps recipe whose meta.platforms is {listed}, not [{system!r}]", notes
        if names_matching(CUDA_SET, recipe):
            return None, "a darwin-mps recipe that uses a CUDA package set", notes
        return (
            {
                "branch": branch,
                "package": package,
                "path": path,
                "torch": torch,
                "python": python,
                "gpu_arch": MPS,
                "cpu_isa": None,
                "cuda": None,
                "platform": system,
                "nixpkgs_rev": pin,
                "cudnn": False,
            },
            None,
            notes,
        )


def isa_disagreement(facts: HardwareFacts, values: Declared, isa: CpuIsa) -> str | None:
    """None when the compiler flags the build gets prove the name's instruction set, either way, else why.

    Beyond it, the build would use instructions the CPUs pickvariant gives it to may lack: SIGILL. Short of it
    (an avx512 name built with AVX2's flags), the name promises what the build does not do."""
    flags = values.flags
    unknown = next((flag for flag in flags if flag not in facts.compiler_flags), None)
    if unknown is not None:
        line = values.line_of(unknown)
        return f"{f'line {line} gives the compiler' if line else 'its build gives the compiler'} {unknown}: " + (
            "it is not in hardware.json compiler_flags, so what CPU it needs is unknown"
        )
    beyond = flags_beyond(facts, flags, isa, "compiler flags")
    if beyond:
        return beyond
    needed = {feature for flag in flags for feature in facts.compiler_flags[flag]}
    lower = sorted(
        other.name
        for other in facts.isas.values()
        if other.platform == isa.platform and needed <= set(other.requires) < set(isa.requires)
    )
    if lower:
        shown = " ".join(flags) or "no instruction-set flag"
        return (
            f"the name says {isa.name}, but its build scripts give the compiler {shown}, "
            f"which the {lower[0]} rule already covers"
        )
    return None


def targets_disagreement(values: Declared, dotted: str, sm: str) -> str | None:
    """None when every GPU target the recipe sets is the name's architecture (and it sets one), else why."""
    read = {target_capability(target) for target, _ in values.targets}
    if read == {dotted}:
        return None
    if not values.targets:
        return f"the name says {sm}, but the recipe sets no GPU target (gpuTargets), so its kernels are not certain"
    return f"the name says {sm} ({dotted}), but the recipe sets GPU targets {_targets_shown(values)}"


def target_capability(value: str) -> str | None:
    """A GPU target as a dotted compute capability ("sm_90", "90", "9.0" -> "9.0"), or None."""
    digits = value.removeprefix("sm_").removeprefix("sm")
    if re.fullmatch(r"\d+\.\d", digits):
        return digits
    if re.fullmatch(r"\d{2,3}", digits):
        return f"{digits[:-1]}.{digits[-1]}"
    return None


def _targets_shown(values: Declared) -> str:
    """Each target once, with the settings that give it: `8.9 (gpuArchSM, gpuTargets)`."""
    settings: dict[str, list[str]] = {}
    for target, setting in values.targets:
        settings.setdefault(target, [])
        if setting not in settings[target]:
            settings[target].append(setting)
    return ", ".join(f"{target} ({', '.join(names)})" for target, names in settings.items())


def flags_beyond(facts: HardwareFacts, flags: Sequence[str], isa: CpuIsa, called: str) -> str | None:
    """None when compiling with `flags` needs nothing the instruction set's rule does not require of a CPU, else why.

    Beyond it, the build would use instructions the CPUs pickvariant gives it to may lack: SIGILL."""
    needed: set[str] = set()
    for flag in flags:
        if flag not in facts.compiler_flags:
            return f"compiler flag {flag} is not in hardware.json compiler_flags, so what CPU it needs is unknown"
        needed.update(facts.compiler_flags[flag])
    beyond = sorted(needed - set(isa.requires))
    if beyond:
        return f"its {called} need {', '.join(beyond)}, which the {isa.name} rule does not require of a CPU"
    return None


def names_matching(pattern: re.Pattern[str], recipe: NixText) -> set[str]:
    """What `pattern` captures of every name the recipe's code uses that it matches whole (strings and comments are no code)."""
    return {match.group(1) for name in recipe.identifiers if (match := pattern.fullmatch(name))}


def _nixpkgs_pin(recipe: NixText) -> tuple[str | None, str | None]:
    """The recipe's one nixpkgs pin, or why there is not exactly one."""
    pins = sorted({pin for string in recipe.strings for pin in NIXPKGS_PIN.findall(string)})
    if not pins:
        return None, "no nixpkgs pin (github.com/NixOS/nixpkgs/archive/<rev>.tar.gz)"
    if len(pins) > 1:
        return None, f"several nixpkgs pins: {', '.join(p[:12] for p in pins)}"
    return pins[0], None


def _python_set_refusal(recipe: NixText, py: str) -> str | None:
    """Why the recipe's pythonPackages set is not the one its name says (pythonNNN), or None."""
    python_sets = names_matching(_PYTHON_SET, recipe)
    if not python_sets or not python_sets <= {"python3", f"python{py}"} or len(python_sets - {"python3"}) > 1:
        return f"the recipe uses {', '.join(sorted(s + 'Packages' for s in python_sets)) or 'no pythonPackages set'}, the name says python{py}"
    return None
