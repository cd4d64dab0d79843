"""One companion recipe's facts (torchvision, torchaudio, vLLM): what `catalog sync REPO…` lists beside the PyTorch variants.

Companions are named as build-pytorch's variants are, with their project in place of `pytorch`
(`torchvision-python313-cuda13_0-sm90-avx512`), and each builds against a torch of its own making:
the same recipe in the same repository (an in-repo companion that imports the pytorch recipe: the
very same derivation), a separate build of a version the recipe pins, or whatever torch the nixpkgs
Flox builds it with gives (no pin: unknown). The row says which; a torch that cannot be read for
certain is unknown, never guessed from a name. Axes are checked against the recipe's own data as for
PyTorch (GPU target, compiler flags, CUDA package set); where they disagree the recipe is left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from pickvariant._base.request import COMPANION_PROJECTS
from pickvariant.sources.build import MPS
from pickvariant.sources.flox.recipes.classify import (
    CUDA_SET,
    NIXPKGS_PIN,
    RELEASE,
    isa_disagreement,
    names_matching,
    targets_disagreement,
)
from pickvariant.sources.flox.recipes.declared import Declared, Reading, declared
from pickvariant.sources.flox.recipes.nixtext import NixText
from pickvariant.sources.hardware import CpuIsa, HardwareFacts

PROJECTS = COMPANION_PROJECTS

_NAME = re.compile(
    r"^(?P<project>torchvision|torchaudio|vllm)-python(?P<py>3\d{1,2})-(?:"
    r"cpu-(?P<cpu_isa>[a-z0-9_.]+?)"
    r"|cuda(?P<cuda>\d+_\d+)-(?P<sm>sm\d+|all)(?:-(?P<isa>[a-z0-9_.]+?))?"
    r"|darwin-(?P<mps>mps))(?:-(?P<option>nomagma))?$"
)
# The one build option a name may end with, `-nomagma` (build-torchaudio: built without MAGMA), as companions.schema.json
# allows it. Where a build with and one without fit alike, the one with MAGMA is preferred (rules/pairing.py).
_IMPORTED_PYTORCH = re.compile(r"^\./(pytorch-[A-Za-z0-9_.-]+)\.nix$")
_PROJECT_VERSION = re.compile(r"\b(?:vLLM|vllm|TorchVision|torchvision|TorchAudio|torchaudio)[ -]v?(\d+\.\d+\.\d+)\b")
# A spelling of an instruction set that names the same one ("armv8.2" in build-torchaudio's GPU recipes).
ISA_SPELLINGS = {"armv8.2": "armv8_2"}


def name_refusal(package: str) -> str | None:
    """Why a companion recipe's name alone leaves it out, or None."""
    return _name_refusal(_NAME.match(package))


def project_of(package: str) -> str | None:
    """The companion project a package name belongs to, or None (a PyTorch variant or something else)."""
    head = package.split("-", 1)[0]
    return head if head in PROJECTS else None


class CompanionClassifier:
    """Reads companion recipes against the hardware facts and the PyTorch rows they may build on."""

    def __init__(self, facts: HardwareFacts) -> None:
        self.facts = facts

    def classify(
        self,
        repo: str,
        branch: str,
        path: str,
        package: str,
        reading: Reading,
        pytorch_rows: Mapping[str, Mapping[str, Any]],
        lib_files: Mapping[str, str],
    ) -> tuple[dict[str, Any] | None, str | None, list[str]]:
        """(row, None, notes) for a classified companion recipe, else (None, why, notes); its trust settled before.

        `pytorch_rows`: this branch's PyTorch rows of the same repository, by package (an in-repo companion
        imports one, classified on its own); `lib_files`: the branch's shared files (build-vllm's lib/cpu-isa.nix),
        by path from .flox/pkgs/, where its declared flags may come from."""
        notes: list[str] = []
        name = _NAME.match(package)
        why = _name_refusal(name)
        if why or name is None:
            return None, why, notes
        recipe = reading.nix
        torch, pin, relation, torch_of, why = self._torch(recipe, branch, path, pytorch_rows)
        if why:
            return None, why, notes
        values = declared(recipe, lib_files)
        if isinstance(values, str):
            return None, values, notes
        row = {
            "project": name["project"],
            "repo": repo,
            "branch": branch,
            "package": package,
            "path": path,
            "version": self._version(recipe, branch),
            "python": f"3.{name['py'][1:]}",
            "gpu_arch": None,
            "cpu_isa": None,
            "cuda": None,
            "platform": "",
            "torch": torch,
            "torch_pin": pin,
            "torch_relation": relation,
            "torch_of": torch_of,
        }
        if name["option"]:
            row["build_options"] = [name["option"]]
        hardware, why = self._hardware(name, values, recipe, relation, f"{repo} {branch}:{path}", notes)
        if why:
            return None, why, notes
        row.update(hardware)
        return self._checked(row, pytorch_rows, notes)

    def _hardware(
        self, name: re.Match[str], values: Declared, recipe: NixText, relation: str, where: str, notes: list[str]
    ) -> tuple[dict[str, Any], str | None]:
        """The row's platform, instruction set, GPU architecture and CUDA line, each as the recipe proves it."""
        if name["mps"]:
            if values.flags or values.targets:
                return {}, "a darwin-mps recipe whose build passes compiler flags or CUDA GPU targets"
            return {"gpu_arch": MPS, "platform": self._system("darwin", "aarch64")}, None
        isa, why = self._proven_isa(name, values, where, notes)
        if why or isa is None:
            return {}, why
        hardware = {"cpu_isa": isa.name, "platform": self._system("linux", isa.platform)}
        if name["cuda"] is None:
            return hardware, None
        why = self._cuda_disagreement(name, isa, values, recipe, relation)
        return {**hardware, "gpu_arch": name["sm"], "cuda": name["cuda"].replace("_", ".")}, why

    def _proven_isa(
        self, name: re.Match[str], values: Declared, where: str, notes: list[str]
    ) -> tuple[CpuIsa | None, str | None]:
        """The instruction set the name says (an older spelling read as today's), if the recipe proves it."""
        spelled = name["cpu_isa"] or name["isa"]
        isa_name = ISA_SPELLINGS.get(spelled, spelled)
        if isa_name != spelled:
            notes.append(f"{where}: instruction set spelled {spelled!r}, read as {isa_name}")
        isa = self.facts.isas.get(isa_name)
        if isa is None:
            return None, f"unknown CPU instruction set {spelled!r} (not in hardware.json cpu_isas)"
        return isa, isa_disagreement(self.facts, values, isa)

    def _cuda_disagreement(
        self, name: re.Match[str], isa: CpuIsa, values: Declared, recipe: NixText, relation: str
    ) -> str | None:
        """Why the GPU architecture and CUDA line of the name are not what the recipe proves, or None."""
        cuda, sm = name["cuda"].replace("_", "."), name["sm"]
        arch = self.facts.gpu_archs.get(sm)
        if arch is None:
            return f"unknown GPU architecture {sm} (not in hardware.json gpu_archs)"
        if not arch.builds_with(cuda) or not arch.has_host(isa.platform):
            return f"{sm} is not built with CUDA {cuda} for {isa.platform} by any toolkit pickvariant knows"
        why = _targets_disagree(values, arch.sm_dotted, sm, relation)
        if why:
            return why
        sets = set(names_matching(CUDA_SET, recipe))
        tag = name["cuda"]
        if sets and not sets <= {tag, tag.split("_")[0]}:
            return f"the name says CUDA {cuda}, the recipe uses {', '.join(sorted('cudaPackages_' + s for s in sets))}"
        return None

    @staticmethod
    def _checked(
        row: dict[str, Any],
        pytorch_rows: Mapping[str, Mapping[str, Any]],
        notes: list[str],
    ) -> tuple[dict[str, Any] | None, str | None, list[str]]:
        """The row, unless it imports a pytorch recipe built for other axes than its own name says."""
        if row["torch_relation"] == "identical":
            own = pytorch_rows[row["torch_of"]]
            axes = ("python", "cuda", "gpu_arch", "cpu_isa", "platform")
            if any(own[key] != row[key] for key in axes):
                differ = ", ".join(
                    f"{key} {own[key]} (its name says {row[key]})" for key in axes if own[key] != row[key]
                )
                return None, f"it imports ./{row['torch_of']}.nix, built for other axes: {differ}", notes
        return row, None, notes

    def _system(self, os_name: str, arch: str) -> str:
        return next(p.nix_system for p in self.facts.platforms.values() if (p.os, p.arch) == (os_name, arch))

    def _torch(
        self,
        recipe: NixText,
        branch: str,
        path: str,
        pytorch_rows: Mapping[str, Mapping[str, Any]],
    ) -> tuple[str | None, str | None, str, str | None, str | None]:
        """(torch version, nixpkgs pin, relation, the PyTorch package it imports, why it is left out)."""
        imported = sorted({match[1] for value, _ in recipe.paths if (match := _IMPORTED_PYTORCH.match(value))})
        if len(imported) > 1:
            return None, None, "", None, f"imports several PyTorch recipes: {', '.join(imported)}"
        if imported:
            own = pytorch_rows.get(imported[0])
            if own is None:
                return (
                    None,
                    None,
                    "",
                    None,
                    f"imports ./{imported[0]}.nix, which branch {branch} does not build as a PyTorch variant",
                )
            return own["torch"], own["nixpkgs_rev"], "identical", imported[0], None
        pins = sorted({pin for string in recipe.strings for pin in NIXPKGS_PIN.findall(string)})
        if len(pins) > 1:
            return None, None, "", None, f"several nixpkgs pins: {', '.join(p[:12] for p in pins)}"
        # Only a version bound inside the torch override is torch's: vLLM's recipes bind their own release as `version` too.
        bound = recipe.version_of("torch")
        if bound is None:
            return (
                None,
                None,
                "",
                None,
                "a version inside its torch override is not a string literal, so its torch's is not certain",
            )
        versions = sorted({v for v in bound if RELEASE.match(v)})
        if len(versions) > 1:
            return None, None, "", None, f"its torch override binds several versions: {', '.join(versions)}"
        if not pins:
            # Its torch is whatever nixpkgs Flox builds it with: not known here.
            return None, None, "unknown", None, None
        torch = versions[0] if versions else self.facts.nixpkgs_torch.get(pins[0])
        return torch, pins[0], "separate" if torch else "unknown", None, None

    def _version(self, recipe: NixText, branch: str) -> str | None:
        """The companion's own release, where its branch (vllm-0.14.1-python311) or its description says it."""
        from_branch = re.match(r"^(?:vllm|torchvision|torchaudio)-(\d+\.\d+\.\d+)", branch)
        if from_branch:
            return from_branch[1]
        found = {m for value in recipe.string_binding("description") or [] for m in _PROJECT_VERSION.findall(value)}
        return found.pop() if len(found) == 1 else None


def _targets_disagree(values: Declared, dotted: str, sm: str, relation: str) -> str | None:
    """Why the GPU targets the recipe sets are not the name's; a companion that imports its PyTorch recipe may set
    none of its own (that recipe's are proven with it)."""
    if relation == "identical" and not values.targets:
        return None
    return targets_disagreement(values, dotted, sm)


LIB_DIR = "lib/"  # build-vllm's shared files (cpu-isa.nix, custom-torch.nix), relative to .flox/pkgs/


def is_shared_file(path: str) -> bool:
    """A file of .flox/pkgs/ a recipe may take declared values from besides itself: build-vllm's lib/*.nix."""
    return path.startswith(LIB_DIR) and path.endswith(".nix")


def read_shared(
    read_blobs: BlobReader, blobs: Mapping[str, Mapping[str, str]], wanted: Callable[[str], bool] = is_shared_file
) -> dict[str, dict[str, str]]:
    """branch -> path -> text of the shared files `wanted`, each blob read once."""
    texts = dict(read_blobs(sorted({blob for files in blobs.values() for path, blob in files.items() if wanted(path)})))
    return {
        branch: {
            path: texts[blob].decode("utf-8", "replace")
            for path, blob in files.items()
            if wanted(path) and blob in texts
        }
        for branch, files in blobs.items()
    }


BlobReader = Callable[[Sequence[str]], Iterator[tuple[str, bytes]]]
# (branch, path, package, blob, text, the PyTorch packages its branch classified) -> the recipe read, or why not
Judged = Callable[[str, str, str, str, str, Collection[str]], Reading | str]


def read_companions(
    read_blobs: BlobReader,
    repo: str,
    wanted: Mapping[str, list[tuple[str, str, str]]],
    lib_blobs: Mapping[str, Mapping[str, str]],
    pytorch_rows: Mapping[str, Mapping[str, Mapping[str, Any]]],
    classifier: CompanionClassifier,
    judged: Judged,
) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]], list[str]]:
    """(rows, (branch, path, why) left out, notes) for companion recipes `wanted` (blob -> (branch, path, package)),
    each held against the upstream (`judged`) and classified; each branch's shared files (branch -> path -> blob)
    read first, one blob in memory at a time."""
    lib_files = read_shared(read_blobs, lib_blobs)
    rows: list[dict[str, Any]] = []
    left_out: list[tuple[str, str, str]] = []
    notes: list[str] = []
    for blob, content in read_blobs(sorted(wanted)):
        text = content.decode("utf-8", "replace")
        for branch, path, package in wanted[blob]:
            own = pytorch_rows.get(branch, {})
            reading = judged(branch, path, package, blob, text, own.keys())
            if isinstance(reading, str):
                left_out.append((branch, path, reading))
                continue
            row, why, found = classifier.classify(repo, branch, path, package, reading, own, lib_files.get(branch, {}))
            notes.extend(found)
            if row is None:
                left_out.append((branch, path, why or "not classified"))
            else:
                rows.append(row)
    rows.sort(key=lambda row: (row["project"], row["repo"], row["branch"], row["package"]))
    return rows, left_out, notes


def _name_refusal(name: re.Match[str] | None) -> str | None:
    """Why a package name alone leaves the recipe out, or None."""
    if name is None:
        return "the package name does not read as PROJECT-pythonNNN-(cpu-ISA | cudaX_Y-smNN-ISA | darwin-mps)"
    if name["cuda"] and not name["isa"]:
        return "its name has no CPU instruction set part, so which CPUs it runs on is not certain"
    if name["sm"] == "all":
        return (
            "a build for every SM its recipe lists ('all'): pickvariant decides per GPU architecture, so it is left out"
        )
    if name["cpu_isa"] == "darwin":
        return "an Intel Mac build (x86_64-darwin, Apple Accelerate): the catalog builds no PyTorch for Intel Macs"
    return None
