"""`pickvariant report`: everything support needs in one paste, with no serials, UUIDs, host or user names."""

from __future__ import annotations

import os
import platform
import re
from typing import Any

from pickvariant import __version__
from pickvariant._base.records import replace
from pickvariant._base.settings import CPUINFO
from pickvariant._base.text import markdown_code, markdown_text
from pickvariant._base.urls import without_credentials
from pickvariant.install.state import last_install
from pickvariant.machine.facts import NOT_STATED, HostFacts
from pickvariant.machine.othergpu import target_id
from pickvariant.output.prebuilt_answer import prebuilt_json
from pickvariant.output.present import decision_json, flags_that_matter
from pickvariant.rules.decision import PrebuiltAnswer, RecipeDecision
from pickvariant.sources import registry
from pickvariant.sources.accelerator import VENDOR
from pickvariant.sources.build import Catalog
from pickvariant.sources.hardware import Hardware
from pickvariant.verify.devices import runtime_said
from pickvariant.verify.judge import variant_mismatches
from pickvariant.verify.probe_run import run_probe

# GPU and MIG UUIDs (GPU-5c1d…, MIG-5c1d…, the older MIG-GPU-…/1/0) identify one card: CUDA_VISIBLE_DEVICES
# may hold them, and a support ticket must not.
_GPU_UUID = re.compile(r"\b(GPU|MIG)-[0-9A-Fa-f]{4,}[0-9A-Fa-f-]*")

# What a report keeps of the probe's facts about the installed torch (its JSON's `installed_torch`, its Markdown line).
INSTALLED_TORCH_KEYS = ("torch", "cuda", "hip", "xpu", "arch_list", "cpu_capability")


def _scrub(text: str) -> str:
    text = without_credentials(_GPU_UUID.sub(lambda match: f"{match.group(1)}-<uuid>", text))
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


def prebuilt_report_answer(answer: PrebuiltAnswer) -> PrebuiltAnswer:
    """The wheel answer as a ticket gets it: no local path (the CPU dump is "a stated CPU dump", the interpreter
    `python`, named by where it was given, in its facts and in every sentence), the same decision."""
    facts = replace(answer.facts, sources=_without_paths(dict(answer.facts.sources.items())))
    environment, decision = answer.environment, answer.decision
    if environment is not None:
        path = environment.interpreter

        def said(text: str | None) -> str | None:
            return text.replace(path, "python") if text is not None else None

        decision = replace(
            decision,
            reasons=tuple(text.replace(path, "python") for text in decision.reasons),
            hints=tuple(text.replace(path, "python") for text in decision.hints),
            detail=replace(decision.detail, installed_said=said(decision.detail.installed_said)),
        )
        environment = replace(environment, interpreter="python", locations={}, site="")
    return replace(answer, facts=facts, environment=environment, decision=decision)


def _without_paths(sources: dict[str, Any]) -> dict[str, Any]:
    """A stated CPU dump is "a stated CPU dump", not its path: a path names hosts, customers and users
    (/srv/tickets/acme/node17.internal.acme.com), and a report goes into tickets."""
    cpu = sources.get("cpu")
    if isinstance(cpu, str) and cpu.startswith(("--cpuinfo ", f"{CPUINFO}=")):
        given = "--cpuinfo" if cpu.startswith("--cpuinfo ") else CPUINFO
        return {**sources, "cpu": f"{given} (a stated CPU dump)"}
    return sources


def build(
    catalog: Catalog,
    facts: HostFacts,
    decision: RecipeDecision,
    workload: str,
    python: list[str],
    source: str,
    described: bool = False,
) -> dict[str, Any]:
    """The report's data, of the recipes of `source`. `described`: the facts describe another machine, so nothing of
    this one (kernel, Python, GPU health, the last install, its PyTorch unless an interpreter is named) is read or
    shown."""
    data = decision_json(facts, decision, catalog, workload, source)
    probe = _this_machine(data, catalog, facts, python, described)
    if probe is not None and decision.build is not None:
        data["mismatches"] = [f"installed {m}" for m in variant_mismatches(probe, decision.build, catalog)]
    return _scrub_all(data)


def build_prebuilt(answer: PrebuiltAnswer, described: bool = False) -> dict[str, Any]:
    """The report's data for the wheels source, in the same shape: the wheel answer's JSON (its environment read
    from its files, no local path) and the report's own fields as `build` fills them, the torch there probed; a
    mismatch is the environment's torch that the wheel rules judge does not run here."""
    shown = prebuilt_report_answer(answer)
    data = prebuilt_json(shown)
    environment = answer.environment
    python = [environment.interpreter] if environment is not None else []
    _this_machine(data, answer.hardware, answer.facts, python, described)
    if shown.decision.detail.installed_fits == "no" and shown.decision.detail.installed_said:
        data["mismatches"] = [f"installed {shown.decision.detail.installed_said}"]
    return _scrub_all(data)


def _this_machine(
    data: dict[str, Any], catalog: Hardware, facts: HostFacts, python: list[str], described: bool
) -> dict[str, Any] | None:
    """Fills the report's fields about the machine it ran on (none of it for a described one) and probes the
    named interpreter's torch; returns what the probe said."""
    data["pickvariant"] = __version__
    data["described"] = described
    data["system"] = (
        {"kernel": None, "python": None}
        if described
        else {"kernel": platform.release(), "python": platform.python_version()}
    )
    data["hardware"]["cpu"]["flags_that_matter"] = flags_that_matter(facts, catalog)
    data["sources"] = _without_paths(data["sources"])
    data["gpu_health"], data["installed_torch"], data["mismatches"], data["last_install"] = [], None, [], None
    if described and not python:
        return None
    if described:  # another machine's: its interpreter's files are read, nothing of this one is probed or imported
        data["installed_torch"] = _read_from_files(python)
        return None
    from pickvariant.machine.gpuwatch import GpuWatch

    with GpuWatch.for_facts(facts) as watch:  # a short look: clocks, power limits, other processes, MIG, ECC
        probe, problem = run_probe(python, quick=True, info_only=True)
    data["gpu_health"] = list(watch.summary())
    # A ticket names no local path: the interpreter probed is `python` (the probe's own sentence names its path).
    shown = " ".join(python)
    said = problem or "unknown"
    if python and os.sep in shown:
        said = said.replace(shown, "python")
    data["installed_torch"] = {k: probe.get(k) for k in INSTALLED_TORCH_KEYS} if probe is not None else {"error": said}
    record = None if described else last_install()
    # Which recipe (repository and commit, or generated) the last install built or installed.
    data["last_install"] = (
        {key: record.get(key) for key in ("package", "branch", "torch", "method", "recipe")} if record else None
    )
    return probe


def _read_from_files(python: list[str]) -> dict[str, Any]:
    """A stated machine's interpreter: the torch its files name (machine/environment.py, torch never imported),
    for the report; where it cannot be read, why."""
    from pickvariant._base.errors import BadInput
    from pickvariant.machine.environment import read_environment

    try:
        environment = read_environment(python[0], "--python")
    except BadInput as error:
        return {"error": str(error).replace(python[0], "python") if os.sep in python[0] else str(error)}
    return {"files": environment.torch}


def health_text(gpu: dict[str, Any]) -> str:
    """One line of a GPU's NVML state: clocks, power, clock-event reasons, sharing, MIG, ECC."""
    parts = []
    if gpu.get("sm_clock_mhz_limit"):
        parts.append(f"SM clock {gpu.get('sm_clock_mhz_max_seen') or '?'} of {gpu['sm_clock_mhz_limit']} MHz")
    if gpu.get("power_limit_w"):
        parts.append(
            f"power limit {gpu['power_limit_w']:.0f} W"
            + (f" of {gpu['power_limit_max_w']:.0f} W allowed" if gpu.get("power_limit_max_w") else "")
        )
    if gpu.get("throttle_reasons_seen"):
        parts.append("clocks held back by " + ", ".join(gpu["throttle_reasons_seen"]))
    parts.append(f"{len(gpu.get('other_processes') or [])} other process(es)")
    if gpu.get("mig_enabled") is not None:
        parts.append(f"MIG {'on' if gpu['mig_enabled'] else 'off'}")
    if gpu.get("ecc_enabled") is not None:
        parts.append(f"ECC {'on' if gpu['ecc_enabled'] else 'off'}")
    return "; ".join(parts)


def markdown(data: dict[str, Any]) -> str:
    """The report for a ticket. Every value from outside (a model name, a GPU name, a path, a reason naming a
    catalog's branch, what a probe printed) is escaped: it shows as written and makes no link, image or HTML."""
    md = markdown_text
    hw = data["hardware"]
    # A described machine's unstated facts are "not stated"; this machine's unknown ones "unknown".
    missing = NOT_STATED if data.get("described") else "unknown"
    lines = [f"### pickvariant report (pickvariant {md(data['pickvariant'])})", ""]
    if data.get("described"):
        lines += ["Describes a stated machine, not the one this report ran on.", ""]
    if data["mismatches"]:
        lines += ["**Mismatches:**", ""] + [f"- ⚠ {md(m)}" for m in data["mismatches"]] + [""]
    rec = data["recommendation"]
    kernel = md(data["system"]["kernel"] or missing)
    flags = md(" ".join(hw["cpu"]["flags_that_matter"]) or "none")
    lines += [
        _recommendation(rec, data.get("source")),
        f"- OS: {md(hw['os'])}/{md(hw['arch'])}, kernel {kernel}",
        f"- CPU: {md(hw['cpu']['model'] or missing)}; flags that matter: {flags}{_source(data, 'cpu')}",
        *_gpu_lines(data, missing),
        _driver_line(data, missing),
    ]
    if hw["cuda_visible_devices"] is not None:
        lines.append(f"- CUDA_VISIBLE_DEVICES: {md(repr(hw['cuda_visible_devices']))}")
    code = (data.get("build") or {}).get("gpu_code") or {}
    served = VENDOR.get(code.get("family", ""))  # the vendor whose GPUs the recommended build's code is for
    lines += [_other_gpu_line(gpu, gpu["vendor"] == served) for gpu in hw.get("other_gpus", ())]
    if data.get("environment"):
        lines.append(_environment_line(data["environment"]))
    lines.append(_torch_line(data["installed_torch"]))
    last = data.get("last_install")
    if last:
        lines.append(f"- Last install: {md(_last_install(last))}")
    heading = f"Reasons (workload {md(data['workload'])}):" if "workload" in data else "Reasons:"
    lines += ["", heading, ""] + [f"- {md(r)}" for r in data["reasons"]]
    if data["hints"]:
        lines += ["", "What would help:", ""] + [f"- {md(h)}" for h in data["hints"]]
    return "\n".join(lines) + "\n"


def _recommendation(rec: dict[str, Any] | None, source: str | None) -> str:
    code = markdown_code
    nouns = None if source is None else registry.named(source).nouns
    if nouns is not None:  # a source of prebuilt builds (which names its nouns): its requirement lines and index
        if not rec:
            return f"- Recommendation: none (no compatible {nouns.build})"
        where = code(rec["index_url"]) if rec.get("index_url") else "PyPI (its own build)"
        return f"- Recommendation: {code(' '.join(rec['requirements']))} from {where}"
    return f"- Recommendation: {code(rec['package'])}" if rec else "- Recommendation: none (no compatible variant)"


def _source(data: dict[str, Any], fact: str) -> str:
    # A stale PICKVARIANT_CPUINFO or a --gpu must not read as detection.
    given = data["sources"].get(fact)
    return f" (source: {markdown_text(given)})" if given and given != NOT_STATED else ""


def _other_gpu_line(gpu: dict[str, Any], served: bool) -> str:
    """An AMD or Intel GPU, as detect's JSON holds it (machine/othergpu.py), and whether the build chosen is for it
    (a ROCm or XPU build: the reasons say how its code runs there)."""
    facts = [
        gpu["target"] and target_id(gpu["target"], gpu.get("features", [])),
        gpu["device_id"] and f"device {gpu['device_id']}",
        gpu["driver"] and f"driver {gpu['driver']}",
    ]
    shown = markdown_text(", ".join(fact for fact in facts if fact) or "stated")
    vendor, source = markdown_text(gpu["vendor"].upper()), markdown_text(gpu["source"])
    said = "the recommended build is for it (see the reasons)" if served else "the recommended build is not for it"
    return f"- GPU ({vendor}): {shown} [{source}]: {said}"


def _gpu_lines(data: dict[str, Any], missing: str) -> list[str]:
    md = markdown_text
    health = {gpu["index"]: gpu for gpu in data.get("gpu_health", [])}
    lines = []
    for gpu in data["hardware"]["gpus"]:
        memory = f"{gpu['memory_mib']} MiB" if gpu["memory_mib"] else f"memory {missing}"
        lines.append(
            f"- GPU {gpu['index']}: {md(gpu['name'])}, compute capability {md(gpu['compute_capability'])}, "
            f"{memory}{_source(data, 'gpus')}"
        )
        if gpu["index"] in health:
            lines.append(f"  - NVML: {md(health_text(health[gpu['index']]))}")
    if not data["hardware"]["gpus"]:
        stated = NOT_STATED if data["sources"].get("gpus") == NOT_STATED else "none"
        lines.append(f"- GPUs: {stated}{_source(data, 'gpus')}")
    return lines


def _driver_line(data: dict[str, Any], missing: str) -> str:
    md = markdown_text
    driver = data["hardware"]["driver"]
    if driver and (driver["version"] or driver["cuda"]):
        return f"- Driver: {md(driver['version'] or missing)} (CUDA {md(driver['cuda'] or missing)}){_source(data, 'driver')}"
    return f"- Driver: {missing if data.get('described') else 'none'}{_source(data, 'driver')}"


def _torch_line(torch: dict[str, Any] | None) -> str:
    md = markdown_text
    if torch is None:
        return f"- Installed PyTorch: {NOT_STATED} (name an interpreter of that machine with --python to probe it)"
    if "error" in torch:
        return f"- Installed PyTorch: {md(torch['error'])}"
    if "files" in torch:  # a stated machine's interpreter: read, not probed here (this machine's probe says nothing)
        found = f"torch {md(torch['files'])}" if torch["files"] else "no torch"
        return f"- Installed PyTorch: {found}, read from the interpreter's files (not probed: the machine is stated)"
    arch_list = md(", ".join(torch["arch_list"]) or "none")
    return (
        f"- Installed PyTorch: {md(torch['torch'])}, {md(runtime_said(torch))}, arch list {arch_list}, "
        f"CPU capability {md(torch['cpu_capability'])}"
    )


def _environment_line(environment: dict[str, Any]) -> str:
    """The wheels source's environment, as read from its files: its Python and what the rules say of its torch."""
    md = markdown_text
    torch = environment["installed"].get("torch")
    said = md(environment["said"] or f"torch {torch} there") if torch else "no torch there"
    return f"- Environment: Python {md(environment['python'])} ({md(environment['python_tag'])}) at `python`; {said}"


def _last_install(last: dict[str, Any]) -> str:
    recipe: dict[str, Any] = last["recipe"] if isinstance(last.get("recipe"), dict) else {}
    origin = (
        f"recipe {recipe.get('path')} from {recipe.get('repo')} at {str(recipe.get('commit'))[:12]}"
        if recipe.get("commit")
        else f"recipe generated by {recipe['generated']}"
        if recipe.get("generated")
        else "recipe unknown"
    )
    return f"{last.get('package')} ({last.get('branch')}, {last.get('method')}); {origin}"
