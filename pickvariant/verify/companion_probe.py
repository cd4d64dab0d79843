"""The probe's companion checks (`verify --with`), run in the target interpreter beside probe.py: the
standard library and torch only, the companions imported here and nowhere else.

For each companion: does it import, which torch does its distribution say it was built against (the
`torch==X` its metadata requires, as wheels and nixpkgs' Python builds record it), and does one real
operation of its compiled extension run on every device (torchvision's nms and roi_align, torchaudio's
lfilter, vLLM's compiled ops module). And for the process: how many libtorch builds are mapped into it
(/proc/self/maps), which is what a companion built against another torch brings in.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from typing import Any

_LIBTORCH = re.compile(r"/(libc10|libtorch_cpu)\.so[^/]*$")
# "torch==2.11.0", or as older wheel metadata writes it, "torch (==2.10.0)".
_TORCH_PIN = re.compile(r"^torch\s*\(?\s*==\s*([0-9][^;,\s)]*)")


def loaded_libtorch() -> list[str] | None:
    """The directories of every libc10/libtorch_cpu mapped into this process; None where /proc/self/maps cannot be read."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            text = maps.read()
    except OSError:
        return None
    found = {
        line.split()[-1].rsplit("/", 1)[0]
        for line in text.splitlines()
        if line.split() and _LIBTORCH.search(line.split()[-1])
    }
    return sorted(found)


def built_against(distribution: str) -> str | None:
    """The torch version a distribution's metadata pins (`torch==2.11.0`), or None where it pins none."""
    try:
        requires = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for requirement in requires:
        match = _TORCH_PIN.match(requirement)
        if match:
            return match.group(1)
    return None


def _op(name: str, device: str, run) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "device": device}
    try:
        entry["ok"] = bool(run())
        if not entry["ok"]:
            entry["error"] = "wrong result"
    except Exception as error:  # an op that cannot run here is a result ("operator torchvision::nms does not exist")
        entry["ok"] = False
        entry["error"] = f"{type(error).__name__}: {error}"[:300]
    return entry


def _torchvision_ops(module, device: str, torch) -> list[dict]:
    def nms() -> bool:
        boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], dtype=torch.float32, device=device)
        scores = torch.tensor([0.9, 0.8, 0.7], device=device)
        return module.ops.nms(boxes, scores, 0.5).cpu().tolist() == [0, 2]

    def roi_align() -> bool:
        features = torch.arange(64, dtype=torch.float32, device=device).reshape(1, 1, 8, 8)
        rois = torch.tensor([[0, 0, 0, 7, 7]], dtype=torch.float32, device=device)
        out = module.ops.roi_align(
            features, rois, output_size=(2, 2), spatial_scale=1.0, sampling_ratio=2, aligned=False
        )
        return (
            tuple(out.shape) == (1, 1, 2, 2)
            and bool(torch.isfinite(out).all())
            and float(out[0, 0, 1, 1]) > float(out[0, 0, 0, 0])
        )

    return [_op("torchvision.ops.nms", device, nms), _op("torchvision.ops.roi_align", device, roi_align)]


def _torchaudio_ops(module, device: str, torch) -> list[dict]:
    import importlib as loader

    functional = loader.import_module(module.__name__ + ".functional")

    def lfilter() -> bool:
        waveform = torch.sin(torch.linspace(0, 100, 4000, device=device)).unsqueeze(0)
        out = functional.lfilter(
            waveform, torch.tensor([1.0, -0.5], device=device), torch.tensor([0.5, 0.5], device=device)
        )
        return tuple(out.shape) == tuple(waveform.shape) and bool(torch.isfinite(out).all())

    return [_op("torchaudio.functional.lfilter", device, lfilter)]


def _vllm_ops(module, device: str, torch) -> list[dict]:
    # The compiled custom ops, without starting an engine or a server (CPU builds of vLLM compile vllm._C too).
    return [_op("import vllm._C", device, lambda: importlib.import_module(module.__name__ + "._C") is not None)]


_OPS = {"torchvision": _torchvision_ops, "torchaudio": _torchaudio_ops, "vllm": _vllm_ops}


def check_companions(projects: list[str], devices: list[str], torch) -> list[dict]:
    """One entry per project: imported, its version, the torch it was built against, and its operations per device."""
    results = []
    for project in projects:
        # Read from its metadata before the import: a build against another torch often fails to import at all.
        ops: list[dict[str, Any]] = []
        entry: dict[str, Any] = {
            "project": project,
            "imported": False,
            "version": None,
            "built_against": built_against(project),
            "ops": ops,
        }
        try:
            module = importlib.import_module(project)
        except Exception as error:  # an undefined symbol of a mismatched build lands here
            entry["error"] = f"{type(error).__name__}: {error}"[:300]
            results.append(entry)
            continue
        entry.update(imported=True, version=getattr(module, "__version__", None))
        for device in devices:
            ops.extend(_OPS[project](module, device, torch))
        results.append(entry)
    return results
