"""`pickvariant report`: everything support needs in one paste, with no serials, UUIDs, host or user names."""

from __future__ import annotations

import os
import platform
import re
from typing import Any

from pickvariant import __version__
from pickvariant.catalog import Catalog
from pickvariant.decide import Decision
from pickvariant.facts import HostFacts
from pickvariant.present import decision_json, flags_that_matter
from pickvariant.verify import run_probe, variant_mismatches


# GPU and MIG UUIDs (GPU-5c1d…, MIG-5c1d…, the older MIG-GPU-…/1/0) identify one card: CUDA_VISIBLE_DEVICES
# may hold them, and a support ticket must not.
_GPU_UUID = re.compile(r"\b(GPU|MIG)-[0-9A-Fa-f]{4,}[0-9A-Fa-f-]*")


def _scrub(text: str) -> str:
    text = _GPU_UUID.sub(lambda match: f"{match.group(1)}-<uuid>", text)
    home = os.path.expanduser("~")
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or ""
    if home and home not in ("/", "~"):
        text = text.replace(home, "~")
    if user and len(user) > 2:
        text = text.replace(user, "<user>")
    return text


def _scrub_all(value: Any) -> Any:
    """Every string of the report, however deep: no field is forgotten."""
    if isinstance(value, str):
        return _scrub(value)
    if isinstance(value, list):
        return [_scrub_all(item) for item in value]
    if isinstance(value, dict):
        return {key: _scrub_all(item) for key, item in value.items()}
    return value


def build(catalog: Catalog, facts: HostFacts, decision: Decision, workload: str, python: list[str]) -> dict[str, Any]:
    data = decision_json(facts, decision, catalog, workload)
    data["pickvariant"] = __version__
    data["system"] = {"kernel": platform.release(), "python": platform.python_version()}
    data["hardware"]["cpu"]["flags_that_matter"] = flags_that_matter(facts, catalog)
    probe, problem = run_probe(python, quick=True, info_only=True)
    mismatches: list[str] = []
    installed: dict[str, Any] | None = None
    if probe is not None:
        installed = {k: probe.get(k) for k in ("torch", "cuda", "arch_list", "cpu_capability")}
        if decision.variant is not None:
            mismatches = [f"installed {m}" for m in variant_mismatches(probe, decision.variant, catalog)]
    data["installed_torch"] = installed if installed else {"error": problem or "unknown"}
    data["mismatches"] = mismatches
    return _scrub_all(data)


def markdown(data: dict[str, Any]) -> str:
    hw = data["hardware"]

    def source(fact: str) -> str:
        # A stale PICKVARIANT_CPUINFO or a --gpu must not read as detection.
        return f" (source: {data['sources'][fact]})" if fact in data["sources"] else ""

    lines = [f"### pickvariant report (pickvariant {data['pickvariant']})", ""]
    if data["mismatches"]:
        lines += ["**Mismatches:**", ""] + [f"- ⚠ {m}" for m in data["mismatches"]] + [""]
    rec = data["recommendation"]
    lines += [
        f"- Recommendation: `{rec['package']}`" if rec else "- Recommendation: none (no compatible variant)",
        f"- OS: {hw['os']}/{hw['arch']}, kernel {data['system']['kernel']}",
        f"- CPU: {hw['cpu']['model']}; flags that matter: {' '.join(hw['cpu']['flags_that_matter']) or 'none'}{source('cpu')}",
    ]
    for gpu in hw["gpus"]:
        lines.append(f"- GPU {gpu['index']}: {gpu['name']}, compute capability {gpu['compute_capability']}, {gpu['memory_mib'] or '?'} MiB{source('gpus')}")
    if not hw["gpus"]:
        lines.append(f"- GPUs: none{source('gpus')}")
    driver = hw["driver"]
    shown = driver and (driver["version"] or driver["cuda"])
    lines.append(f"- Driver: {driver['version'] or '?'} (CUDA {driver['cuda'] or '?'}){source('driver')}" if shown else f"- Driver: none{source('driver')}")
    if hw["cuda_visible_devices"] is not None:
        lines.append(f"- CUDA_VISIBLE_DEVICES: {hw['cuda_visible_devices']!r}")
    torch = data["installed_torch"]
    if "error" in torch:
        lines.append(f"- Installed PyTorch: {torch['error']}")
    else:
        lines.append(f"- Installed PyTorch: {torch['torch']}, CUDA {torch['cuda'] or 'none'}, arch list {', '.join(torch['arch_list']) or 'none'}, CPU capability {torch['cpu_capability']}")
    lines += ["", f"Reasons (workload {data['workload']}):", ""] + [f"- {r}" for r in data["reasons"]]
    if data["hints"]:
        lines += ["", "What would help:", ""] + [f"- {h}" for h in data["hints"]]
    return "\n".join(lines) + "\n"
