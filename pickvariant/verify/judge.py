"""`pickvariant verify`: judge what the probe reports (verify/probe_run.py runs it in the target interpreter)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pickvariant._base.records import keyword_record, replace
from pickvariant._base.versions import release_numbers
from pickvariant.machine.facts import HostFacts
from pickvariant.machine.gpu import cuda_visible_count
from pickvariant.rules.compat import usable_isas
from pickvariant.sources.build import Variant
from pickvariant.sources.hardware import Hardware
from pickvariant.verify.devices import arch_capabilities, judge_devices, judge_other_gpus, runtime_said, xpu_labels
from pickvariant.verify.probe_run import run_probe

# A figure above the GPU's catalog peak by more than this is a measurement error, not a fast GPU:
# boost clocks above the rated one and GeForce ratings that understate the silicon stay below it
# (RTX 5090: 224 TFLOP/s bf16 measured against 209.5 rated, 107%; hardware-facts.md table 7).
PEAK_TOLERANCE_PERCENT = 15.0
# A timed sample shorter than this is mostly launch latency, timer resolution and clock ramp-up
# (a 2048^3 bf16 product takes ~25 us on an H100): such a figure is not shown as a speed.
MIN_TIMED_S = 1e-3
# Below this share of the catalog's bf16 peak on the 8192^3 product, verify says the GPU is slow and
# shows what NVML knows. Healthy H100/H200s reach 76-82% in this probe (benchmarks/results/), so
# half the peak is far outside what a difference of model or clocks explains: a throttled, capped,
# shared or misconfigured GPU.
SLOW_PERCENT_OF_PEAK = 50.0


@keyword_record
class VerifyResult:
    passed: bool
    reasons: tuple[str, ...]
    probe: dict[str, Any] | None = None
    findings: tuple[dict[str, Any], ...] = ()
    # Where a GPU ran far below its peak: what was seen, and what NVML said while the probe ran.
    speed: tuple[str, ...] = ()
    health: tuple[dict[str, Any], ...] = ()


def expected_capability(catalog: Hardware, facts: HostFacts, variant: Variant | None) -> str | None:
    """The CPU dispatch level torch should pick: the variant's, else the best this CPU can run."""
    order = catalog.torch_capability_order
    if variant is not None:
        if variant.cpu_isa is None:
            return None
        isa = catalog.isas[variant.cpu_isa]
        return isa.torch_cpu_capability if isa.platform == "x86_64" else None
    if facts.arch != "x86_64":
        return None
    usable = [isa.torch_cpu_capability for isa in usable_isas(catalog, facts)]
    return max(usable, key=order.index) if usable else None


def _dispatch_said(got: str | None, expected: str, cpu_best: str | None, of_variant: bool) -> str:
    """The CPU dispatch level torch picked, at or above the expected one, said as what it is."""
    whose = "the variant's instruction set" if of_variant else "this CPU"
    if got == expected:
        return f"CPU dispatch {got}, as {whose} calls for"
    if cpu_best is not None and got == cpu_best:
        # ATen builds kernels for several levels and picks the best the CPU runs, whatever flags the build had.
        return (
            f"CPU dispatch {got}, above the {expected} of {whose}: ATen picks its CPU kernels at run time, and this "
            f"CPU runs {got}"
        )
    shown = f"{cpu_best}, the most" if cpu_best else "what"
    return f"CPU dispatch {got}, above the {expected} of {whose} and above {shown} this CPU's flags show"


def judge(probe: dict[str, Any], catalog: Hardware, facts: HostFacts, variant: Variant | None) -> VerifyResult:
    """What the probe's output shows of this torch here: each stage adds its failures and its reasons."""
    failures: list[str] = []
    reasons = [f"torch {probe['torch']} ({runtime_said(probe)}), CPU capability {probe['cpu_capability']}"]
    _judge_visibility(probe, facts, failures, reasons)
    labels = {**gpu_labels(probe, facts), **xpu_labels(probe)}
    judge_devices(probe, catalog, labels, _nvml_indexes(probe, facts), failures, reasons)
    judge_other_gpus(probe, facts, failures, reasons)
    _judge_dispatch(probe, catalog, facts, variant, failures, reasons)
    gpu_build = bool(probe.get("cuda")) and bool(probe.get("devices"))
    if gpu_build and probe.get("cudnn") is None:
        reasons.append(
            "this torch has no cuDNN (as the build repository's SM61 recipes build it, USE_CUDNN=0): convolutions "
            "ran on PyTorch's own CUDA kernels, correct but slower; their speed is not judged"
        )
    findings = [_judge_check(check, probe, catalog, labels, gpu_build, failures) for check in probe.get("checks", [])]
    if not probe.get("checks"):
        # Importing torch proves nothing about its kernels: a verdict needs at least one computation that ran.
        failures.append("the probe ran no check: nothing was computed with this torch, so nothing is known to run here")
    if "companions" in probe:
        _judge_companions(probe, labels, failures, reasons)
    if variant is not None:
        mismatches = variant_mismatches(probe, variant, catalog)
        failures.extend(f"this torch is not {variant.package}: {mismatch}" for mismatch in mismatches)
        if not mismatches:
            reasons.append(f"torch version, CUDA version and arch list are those of {variant.package}")
    return VerifyResult(
        passed=not failures,
        reasons=tuple(failures + reasons),
        probe=probe,
        findings=tuple(findings),
        speed=speed_verdict(findings),
    )


def _judge_visibility(probe: dict[str, Any], facts: HostFacts, failures: list[str], reasons: list[str]) -> None:
    """Could the probe see the GPUs at all: CUDA_VISIBLE_DEVICES, a torch without CUDA, a Mac without MPS."""
    visible = (
        len(facts.gpus)
        if facts.cuda_visible_devices is None
        else cuda_visible_count(facts.cuda_visible_devices, len(facts.gpus))
    )
    if facts.gpus and visible == 0:
        failures.append(
            f"CUDA_VISIBLE_DEVICES={facts.cuda_visible_devices!r} hides all {len(facts.gpus)} GPU(s) from the probe, so no GPU kernel "
            "could be checked: unset it, or name the GPUs to check"
        )
    elif facts.gpus and not probe.get("cuda_available"):
        failures.append(f"this machine has {len(facts.gpus)} GPU(s) but this torch cannot use CUDA")
    elif facts.os == "darwin" and facts.arch == "aarch64" and not probe.get("mps_available"):
        failures.append("this Mac's torch cannot use the Apple GPU: torch.backends.mps.is_available() is not True")
    elif visible < len(facts.gpus):
        reasons.append(
            f"CUDA_VISIBLE_DEVICES={facts.cuda_visible_devices!r}: the probe saw {visible} of {len(facts.gpus)} GPUs; the others were not checked"
        )


def _judge_dispatch(
    probe: dict[str, Any],
    catalog: Hardware,
    facts: HostFacts,
    variant: Variant | None,
    failures: list[str],
    reasons: list[str],
) -> None:
    """The CPU kernels torch dispatches against those the variant (or this CPU) calls for."""
    expected = expected_capability(catalog, facts, variant)
    if not expected:
        return
    order = catalog.torch_capability_order
    got = probe.get("cpu_capability")
    capped = probe.get("aten_cpu_capability")
    calls_for = "the variant" if variant else "this CPU"
    if got in order and order.index(got) < order.index(expected):
        if capped:
            # The interpreter's environment asked torch for less (ATEN_CPU_CAPABILITY): a choice, not a wrong build.
            reasons.append(
                f"torch dispatches CPU kernels at {got}, below the {expected} {calls_for} "
                f"calls for, because ATEN_CPU_CAPABILITY={capped} asks it to"
            )
        else:
            failures.append(f"torch dispatches CPU kernels at {got}, but {calls_for} calls for {expected}")
    else:
        reasons.append(_dispatch_said(got, expected, expected_capability(catalog, facts, None), variant is not None))


def _judge_check(
    check: dict[str, Any],
    probe: dict[str, Any],
    catalog: Hardware,
    labels: dict[str, str],
    gpu_build: bool,
    failures: list[str],
) -> dict[str, Any]:
    """One check's finding: where it ran, its speed against the peak and the bare loop where it can be timed."""
    finding = dict(check)
    where = labels.get(check["device"], check["device"])
    finding["gpu"] = where if where != check["device"] else None
    # What one timed sample spanned: a call, or a batch of calls between two events.
    span = check.get("span_seconds", check.get("seconds"))
    too_short = span is not None and span < MIN_TIMED_S
    peak = None if too_short else _peak(catalog, probe, check)
    if check.get("speed_note"):  # the probe did not time it, and says why
        finding["throughput_note"] = check["speed_note"]
    elif span is not None and too_short:
        finding["throughput_note"] = f"{span * 1e6:.0f} us per timed sample: too short to time, no speed shown"
    if peak:
        finding["percent_of_peak"] = 100.0 * check["tflops"] / peak
    if not too_short and check.get("bare_loop_tflops"):
        finding["percent_of_bare_loop"] = 100.0 * check["tflops"] / check["bare_loop_tflops"]
    if check.get("layer") and gpu_build and probe.get("cudnn") is None:
        peak = None  # PyTorch's own convolution kernels: no tensor-core figure to hold them to
        finding.pop("percent_of_peak", None)
    if check.get("ok") is False:
        failures.append(
            f"{check['name']} on {where}: "
            + (check.get("error") or f"relative error {check.get('rel_error'):.2e} above {check.get('tolerance')}")
        )
    elif peak and finding["percent_of_peak"] > 100.0 + PEAK_TOLERANCE_PERCENT:
        finding["ok"] = False
        failures.append(
            f"{check['name']} on {where}: {rate_text(check)} is {finding['percent_of_peak']:.0f}% of the GPU's peak {peak:g} TFLOP/s, "
            f"more than it can do: a measurement error (the timing did not cover the work), so the figure is not trusted"
        )
    return finding


def _judge_companions(probe: dict[str, Any], labels: dict[str, str], failures: list[str], reasons: list[str]) -> None:
    """verify --with: each companion imports, was built against this torch, and runs its own operation on every device;
    exactly one libtorch is mapped into the process."""
    torch_release = str(probe["torch"]).split("+", 1)[0]
    for entry in probe["companions"]:
        project = entry["project"]
        against = entry.get("built_against")
        if not entry["imported"]:
            built = (
                f" (it was built against torch {against}; this torch is {probe['torch']})"
                if against and against.split("+", 1)[0] != torch_release
                else ""
            )
            failures.append(
                f"{project} does not import in this interpreter: {entry.get('error', 'unknown error')}{built}"
            )
            continue
        if against is None:
            reasons.append(
                f"{project} {entry.get('version') or ''} does not say which torch it was built against (no torch== in its metadata)".replace(
                    "  ", " "
                )
            )
        elif against.split("+", 1)[0] != torch_release:
            failures.append(
                f"{project} {entry.get('version') or ''} was built against torch {against}; the torch this interpreter imports is {probe['torch']}"
            )
        else:
            reasons.append(f"{project} {entry.get('version') or ''} was built against this torch ({against})")
        if not entry["ops"]:
            failures.append(f"{project} imported but ran no operation: its compiled kernels were not checked")
        for op in entry["ops"]:
            where = labels.get(op["device"], op["device"])
            if op["ok"]:
                reasons.append(f"{op['name']} on {where}: ok")
            else:
                failures.append(f"{op['name']} on {where}: {op.get('error', 'failed')}")
    mapped = probe.get("libtorch")
    if mapped is None:
        reasons.append("how many libtorch builds this process maps could not be read (/proc/self/maps)")
    elif len(mapped) > 1:
        failures.append(
            f"{len(mapped)} libtorch builds are loaded in one process ({', '.join(mapped)}): a companion brought its own torch"
        )
    else:
        reasons.append(f"one libtorch is loaded in the process ({', '.join(mapped) or 'none found'})")


def speed_verdict(findings: list[dict[str, Any]]) -> tuple[str, ...]:
    """A line for each GPU whose bf16 product reached less than SLOW_PERCENT_OF_PEAK of its catalog peak."""
    slow = []
    for finding in findings:
        if (
            finding["name"] == "matmul bf16"
            and finding.get("percent_of_peak") is not None
            and finding["percent_of_peak"] < SLOW_PERCENT_OF_PEAK
        ):
            where = finding.get("gpu") or finding["device"]
            slow.append(
                f"{where} is slow: its bf16 product reached {finding['percent_of_peak']:.0f}% of the catalog peak "
                f"(under {SLOW_PERCENT_OF_PEAK:.0f}%; healthy H100/H200s reach 76-82% in this probe)"
            )
    return tuple(slow)


def gpu_labels(probe: dict[str, Any], facts: HostFacts) -> dict[str, str]:
    """How each CUDA device of the probe is named in the verdict: as NVML and `detect` name it
    (index and name), with the CUDA ordinal where CUDA_VISIBLE_DEVICES or CUDA's ordering renumbers it.

    The PCI location is the link: CUDA's ordinal alone says nothing of which card it is.
    """
    by_pci = {gpu.pci: gpu for gpu in facts.gpus if gpu.pci}
    labels = {}
    for device in probe.get("devices", []):
        ordinal = f"cuda:{device['index']}"
        gpu = by_pci.get(device.get("pci") or "")
        if gpu is None:
            labels[ordinal] = f"{ordinal} ({device['name']})"
        elif gpu.index == device["index"]:
            labels[ordinal] = f"GPU {gpu.index} ({gpu.name})"
        else:
            labels[ordinal] = f"GPU {gpu.index} ({gpu.name}, CUDA ordinal {ordinal})"
    return labels


def _nvml_indexes(probe: dict[str, Any], facts: HostFacts) -> dict[int, int]:
    """Each CUDA ordinal the probe saw, as the NVML index detect names the same card by (its PCI location)."""
    by_pci = {gpu.pci: gpu.index for gpu in facts.gpus if gpu.pci}
    found = {}
    for device in probe.get("devices", []):
        if (index := by_pci.get(device.get("pci") or "")) is not None:
            found[device["index"]] = index
    return found


def finding_text(check: dict[str, Any]) -> str:
    """One check as a line: where, whether it was right, and its speed where the speed means something."""
    state = {True: "ok", False: "FAIL", None: "n/a"}[check.get("ok")]
    where = check.get("gpu") or check["device"]
    if check["device"] == "cpu" and check.get("dispatch"):
        where = f"cpu ({check['dispatch']} dispatch)"
    if check.get("throughput_note"):
        return f"{check['name']} on {where}: {state} ({check['throughput_note']})"
    shares = [f"{check['percent_of_peak']:.0f}% of peak"] if "percent_of_peak" in check else []
    if "percent_of_bare_loop" in check:
        shares.append(f"{check['percent_of_bare_loop']:.0f}% of a bare loop")
    return f"{check['name']} on {where}: {state}, {rate_text(check)}" + (f" ({', '.join(shares)})" if shares else "")


def rate_text(check: dict[str, Any]) -> str:
    """A check's throughput in units that show it: CPU figures are GFLOP/s, not "0.00 TFLOP/s"."""
    for key, unit in (("tflops", "FLOP/s"), ("tops", "OP/s")):
        if key in check:
            value = float(check[key])
            return f"{value:.2f} T{unit}" if value >= 1 else f"{value * 1000:.1f} G{unit}"
    return "-"


def variant_mismatches(probe: dict[str, Any], variant: Variant, catalog: Hardware) -> list[str]:
    """Each field in which the probed torch differs from `variant`'s build: torch version, CUDA version, arch list."""
    problems = []
    if release_numbers(probe.get("torch")) != release_numbers(variant.torch):
        problems.append(f"torch {probe.get('torch')}, the variant ships {variant.torch}")
    expected_cuda = variant.cuda
    if release_numbers(probe.get("cuda")) != release_numbers(expected_cuda):
        problems.append(
            f"CUDA {probe.get('cuda') or 'none'}, the variant is built with {expected_cuda or 'no CUDA (CPU-only)'}"
        )
    if variant.is_mps and probe.get("mps_available") is False:
        problems.append("torch.backends.mps.is_available() is False, the variant is an MPS build")
    if variant.gpu_arch is not None and variant.gpu_arch in catalog.gpu_archs:
        wanted = catalog.gpu_archs[variant.gpu_arch].compute_capability
        arch_list = probe.get("arch_list") or []
        if not any(kind == "sm" and capability == wanted for kind, capability in arch_capabilities(arch_list)):
            problems.append(
                f"arch list {', '.join(arch_list) or 'empty'} has no sm_{wanted.major}{wanted.minor} kernels, the variant's GPU target"
            )
    return problems


def _peak(catalog: Hardware, probe: dict[str, Any], check: dict[str, Any]) -> float | None:
    if not str(check.get("device", "")).startswith("cuda") or "tflops" not in check:
        return None
    index = int(check["device"].split(":")[1])
    name = next((d["name"] for d in probe["devices"] if d["index"] == index), "")
    peak = catalog.peak_for(name)
    return peak.tflops.get(check["dtype"]) if peak else None


def verify(
    python: list[str],
    catalog: Hardware,
    variant: Variant | None,
    quick: bool,
    facts: HostFacts | None = None,
    companions: Sequence[str] = (),
) -> VerifyResult:
    if facts is None:
        from pickvariant.machine.facts import gather_facts

        facts = gather_facts(catalog)
    from pickvariant.machine.gpuwatch import GpuWatch

    with GpuWatch.for_facts(facts) as watch:
        probe, problem = run_probe(python, quick, companions=companions)
    if probe is None:
        return VerifyResult(passed=False, reasons=(problem or "the probe failed",))
    result = judge(probe, catalog, facts, variant)
    health = watch.summary()
    speed = result.speed + tuple(line for gpu in health for line in _health_lines(gpu)) if result.speed else ()
    return replace(result, speed=speed, health=health)


def _health_lines(gpu: dict[str, Any]) -> list[str]:
    """What NVML saw of one GPU while the probe ran, in words (only what it could answer)."""
    name = f"GPU {gpu['index']}"
    lines = []
    if gpu.get("sm_clock_mhz_max_seen") is not None and gpu.get("sm_clock_mhz_limit"):
        lines.append(
            f"{name}: SM clock up to {gpu['sm_clock_mhz_max_seen']} MHz under load, of {gpu['sm_clock_mhz_limit']} MHz maximum"
        )
    if gpu.get("throttle_reasons_seen"):
        lines.append(f"{name}: clocks held back by {', '.join(gpu['throttle_reasons_seen'])}")
    if gpu.get("power_w_max_seen") is not None and gpu.get("power_limit_w"):
        lines.append(
            f"{name}: power up to {gpu['power_w_max_seen']:.0f} W of a {gpu['power_limit_w']:.0f} W limit"
            + (
                f" (the board allows {gpu['power_limit_max_w']:.0f} W)"
                if gpu.get("power_limit_max_w") and gpu["power_limit_max_w"] > gpu["power_limit_w"] + 1
                else ""
            )
        )
    if gpu.get("other_processes"):
        lines.append(
            f"{name}: shared with {len(gpu['other_processes'])} other process(es): "
            + ", ".join(f"pid {p['pid']} ({p['used_mib']} MiB)" for p in gpu["other_processes"][:5])
        )
    if gpu.get("mig_enabled"):
        lines.append(f"{name}: MIG is on: the probe ran on one instance, a fraction of the GPU")
    if gpu.get("ecc_enabled") is False:
        lines.append(f"{name}: ECC is off")
    return lines
