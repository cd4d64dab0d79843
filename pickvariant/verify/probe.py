"""Standalone probe run in the target interpreter: needs only the standard library and torch. Prints one JSON object
with what torch reports and what its kernels did here. It judges nothing: pickvariant compares the result with the
catalog."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from typing import Any


def rel_error(out, ref) -> float:
    import torch

    out64 = out.double()
    if not torch.isfinite(out64).all():
        return NOT_FINITE
    return finite(float(torch.linalg.norm(out64 - ref) / torch.linalg.norm(ref)))


# The output is strict JSON (no NaN, no Infinity: the judge refuses them, as every reader of JSON in pickvariant
# does): a result holding NaN or infinite values is said with the largest finite error, which no tolerance passes.
NOT_FINITE = sys.float_info.max


def finite(value: float) -> float:
    return value if value == value and abs(value) != float("inf") else NOT_FINITE


def on_device(device: str):
    """Make `device` the current CUDA (or XPU) device for the block (a no-op for the CPU and MPS). Events record on the
    current device's stream and synchronize() waits for the current device: left on GPU 0 while GPU 1 works, they time
    nothing (issue 16: 852 "TFLOP/s" of fp32)."""
    import contextlib

    import torch

    backend = getattr(torch, device.split(":")[0]) if device.startswith(("cuda", "xpu")) else None
    return backend.device(torch.device(device)) if backend is not None else contextlib.nullcontext()


MIN_SAMPLE_S = 2e-3
MAX_CALLS_PER_SAMPLE = 1024


def _sampler(fn, device: str):
    """A function that runs fn() `calls` times back to back and returns the seconds that took:
    between CUDA events on CUDA GPUs, by perf_counter on the CPU (and MPS and XPU, synchronised)."""
    import torch

    if device.startswith("cuda"):

        def run_on_cuda(calls: int) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1000.0

        return run_on_cuda
    sync = (
        torch.mps.synchronize if device == "mps" else torch.xpu.synchronize if device[:3] == "xpu" else (lambda: None)
    )

    def run(calls: int) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        return time.perf_counter() - start

    return run


def _calls_per_sample(run, batch: int) -> int:
    """After a warm-up call, the calls a sample needs to span MIN_SAMPLE_S (at least `batch`), doubling as timeit's autorange does."""
    run(1)  # the warm-up
    calls = max(1, batch)
    while calls < MAX_CALLS_PER_SAMPLE and run(calls) < MIN_SAMPLE_S:
        calls *= 2
    return calls


def timed(fn, device: str, repeats: int, batch: int = 1) -> tuple[float, float]:
    """(median seconds per fn(), seconds one timed sample spanned) after a warm-up.

    Each sample is a run of calls back to back, at least `batch` and as many as make it span MIN_SAMPLE_S: a kernel
    shorter than the launch-and-wait round trip would otherwise be timed mostly idle (a 0.2 ms convolution measured
    one call at a time read 33% of what the same calls reach in a loop), and a CPU product of half a millisecond (AMX)
    would be timer noise. Sizing the run from the warm-up call instead let its one-off cost (oneDNN's JIT, cuDNN's
    autotuning) choose runs far too short."""
    run = _sampler(fn, device)
    with on_device(device):
        calls = _calls_per_sample(run, batch)
        while True:
            per_call = statistics.median(run(calls) / calls for _ in range(repeats))
            # A sizing run that a busy machine slowed chose too few calls: the median says so, and the
            # samples grow until the median one spans what a timed sample must (the judge's MIN_TIMED_S).
            if per_call * calls >= MIN_SAMPLE_S / 2 or calls >= MAX_CALLS_PER_SAMPLE:
                return per_call, per_call * calls
            calls *= 2


def timed_beside_bare_loop(fn, device: str, repeats: int, batch: int, loop: int) -> tuple[float, float, float]:
    """(median seconds per call as timed() takes it, seconds per sample, median seconds per call of a bare
    loop of `loop` calls), the two taken interleaved on the same warmed-up state.

    Taken one after the other (all the probe's samples, then one bare loop) they differed by order,
    warm-up and clocks: on an H100 and two H200s every layer read 100-118% of its own bare loop, run
    after run. Alternated sample by sample, and each pair in the other order every other round, a
    quiet GPU reads what both really are: the same kernels, timed alike."""
    run = _sampler(fn, device)
    with on_device(device):
        calls = _calls_per_sample(run, batch)
        run(loop)  # the bare loop's own first run, so that neither side pays for the other's warm-up
        probe_samples: list[float] = []
        bare_samples: list[float] = []
        for round_number in range(repeats):
            pair = ((probe_samples, calls), (bare_samples, loop))
            for samples, count in pair if round_number % 2 == 0 else reversed(pair):
                samples.append(run(count) / count)
        per_call = statistics.median(probe_samples)
        return per_call, per_call * calls, statistics.median(bare_samples)


# A GPU product this size or larger reaches its steady speed (the full verify's 8192 reaches 76-82%
# of the bf16 peak on H100/H200); --quick's 2048 stays well below and is not timed.
GPU_TIMED_SIZE = 8192


def check_matmul(results, device, dtype_name, n_check, n_time, repeats, tf32=False):
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "tf32": torch.float32}[dtype_name]
    entry = {"name": f"matmul {dtype_name}", "device": device, "dtype": dtype_name}
    try:
        if device.startswith("cuda"):
            torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n_check, n_check, dtype=torch.float64)
        b = torch.randn(n_check, n_check, dtype=torch.float64)
        out = (a.to(device, dtype) @ b.to(device, dtype)).cpu()
        # The reference uses the same rounded inputs, so only the product's own error counts.
        ref = a.to(dtype).double() @ b.to(dtype).double()
        entry["rel_error"] = rel_error(out, ref)
        if entry["rel_error"] == NOT_FINITE:
            entry["error"] = "its result holds NaN or infinite values"
        entry["tolerance"] = {"bf16": 1e-2, "fp16": 1e-2, "tf32": 5e-3, "fp32": 1e-4}[dtype_name]
        entry["ok"] = entry["rel_error"] <= entry["tolerance"]
        entry["size"] = n_time
        if device.startswith(("cuda", "xpu")) and n_time < GPU_TIMED_SIZE:
            entry["speed_note"] = (
                f"--quick: a {n_time}x{n_time} product is too small to show a GPU's speed; verify without --quick measures it"
            )
        else:
            x = torch.randn(n_time, n_time, device=device, dtype=dtype)
            y = torch.randn(n_time, n_time, device=device, dtype=dtype)
            seconds, span = timed(lambda: x @ y, device, repeats)
            entry.update(seconds=seconds, span_seconds=span)
            entry["tflops"] = 2 * n_time**3 / seconds / 1e12
    except Exception as error:  # an unsupported dtype is a result, not a crash
        entry["ok"] = False
        entry["error"] = f"{type(error).__name__}: {error}"[:300]
    finally:
        if device.startswith("cuda"):
            torch.backends.cuda.matmul.allow_tf32 = False
    results.append(entry)


def bare_loop_bf16(device, n, iterations):
    """The baseline verify is held to: a plain loop of a @ b timed with CUDA events around it."""
    import torch

    with on_device(device):
        a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
        for _ in range(3):
            a @ b
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            a @ b
        end.record()
        end.synchronize()
    return 2 * n**3 * iterations / (start.elapsed_time(end) / 1000.0) / 1e12


def check_conv(results, device, dtype_name, quick):
    import torch

    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]
    entry = {"name": f"conv2d {dtype_name}", "device": device, "dtype": dtype_name}
    # cuDNN runs float32 convolutions in TF32 unless told not to: that is not an fp32 result.
    torch.backends.cudnn.allow_tf32 = False
    try:
        batch, channels, size = (4, 16, 16) if quick or not device.startswith(("cuda", "xpu")) else (32, 64, 56)
        x = torch.randn(batch, channels, size, size, dtype=torch.float64)
        w = torch.randn(channels, channels, 3, 3, dtype=torch.float64)
        out = torch.nn.functional.conv2d(x.to(device, dtype), w.to(device, dtype), padding=1).cpu()
        ref = torch.nn.functional.conv2d(x.to(dtype).double(), w.to(dtype).double(), padding=1)
        entry["rel_error"] = rel_error(out, ref)
        if entry["rel_error"] == NOT_FINITE:
            entry["error"] = "its result holds NaN or infinite values"
        entry["tolerance"] = 1e-2 if dtype_name == "bf16" else 1e-4
        entry["ok"] = entry["rel_error"] <= entry["tolerance"]
        if device.startswith(("cuda", "xpu")):
            # NCHW with 64 channels keeps the tensor cores idle: its speed (a tenth of the peak on an
            # H100) would say nothing of the install. The layer shapes below measure GPU convolutions.
            entry["speed_note"] = "a correctness check; " + (
                "verify without --quick times convolutions as models run them"
                if quick
                else "the layer shapes time convolutions as models run them"
            )
        else:
            xt, wt = x.to(device, dtype), w.to(device, dtype)
            seconds, span = timed(lambda: torch.nn.functional.conv2d(xt, wt, padding=1), device, 5)
            entry.update(seconds=seconds, span_seconds=span)
            entry["tflops"] = 2 * batch * channels * channels * 9 * size * size / seconds / 1e12
    except Exception as error:
        entry["ok"] = False
        entry["error"] = f"{type(error).__name__}: {error}"[:300]
    results.append(entry)


# Layer shapes of real models, where cuDNN's tensor-core kernels run as in training (bf16,
# channels_last, autotuned): (name, batch, in channels, out channels, height = width, kernel).
# Chosen with benchmarks/conv_shapes.py on an H100 and an H200 (benchmarks/results/).
# On an H100 these reached 75-83% of the bf16 peak; ResNet-50's own 3x3 layers (64-512 channels)
# reach 37-74% at batch 256 however they are timed: their shapes, not the install, set the figure.
CONV_LAYERS = (
    ("vgg16 conv3 3x3 256ch 56x56 b64", 64, 256, 256, 56, 3),
    ("sd-unet 3x3 640ch 32x32 b64", 64, 640, 640, 32, 3),
    ("3x3 1024ch 14x14 b256", 256, 1024, 1024, 14, 3),
)

LAYER_BATCH = 10  # calls per timed sample of a layer: a sample of 3+ ms, one call is 0.3 ms


def conv_flops(batch, in_channels, out_channels, size, kernel):
    """Multiply-adds of a stride-1, same-padded convolution, counted as two FLOPs each."""
    return 2 * batch * in_channels * out_channels * kernel * kernel * size * size


def time_conv_layer(device, batch, in_channels, out_channels, size, kernel, repeats, loop):
    """(median seconds per call as the probe times it, seconds per timed sample, seconds per call of a bare loop, relative error)."""
    import torch

    previous = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True  # as training sets it: cuDNN picks its fastest algorithm
    try:
        with on_device(device):
            x = torch.randn(batch, in_channels, size, size, device=device, dtype=torch.bfloat16)
            w = torch.randn(out_channels, in_channels, kernel, kernel, device=device, dtype=torch.bfloat16)
            x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
            padding = kernel // 2

            def conv():
                return torch.nn.functional.conv2d(x, w, padding=padding)

            torch.backends.cudnn.allow_tf32 = False
            sample = conv()[:2].float()
            reference = torch.nn.functional.conv2d(x[:2].float(), w.float(), padding=padding)
            error = finite(float(torch.linalg.norm(sample - reference) / torch.linalg.norm(reference)))
            seconds, span, bare = timed_beside_bare_loop(conv, device, repeats, LAYER_BATCH, loop)
    finally:
        torch.backends.cudnn.benchmark = previous
    return seconds, span, bare, error


def check_conv_layers(results, device):
    """Each layer shape's throughput as verify times it, beside a bare loop of it in the same run."""
    for name, batch, in_channels, out_channels, size, kernel in CONV_LAYERS:
        entry = {"name": f"conv2d bf16 channels_last {name}", "device": device, "dtype": "bf16", "layer": name}
        try:
            seconds, span, bare, error = time_conv_layer(
                device, batch, in_channels, out_channels, size, kernel, repeats=6, loop=50
            )
            flops = conv_flops(batch, in_channels, out_channels, size, kernel)
            entry.update(
                rel_error=error,
                tolerance=1e-2,
                ok=error <= 1e-2,
                seconds=seconds,
                span_seconds=span,
                tflops=flops / seconds / 1e12,
                bare_loop_tflops=flops / bare / 1e12,
            )
        except Exception as error:
            entry.update(ok=False, error=f"{type(error).__name__}: {error}"[:300])
        results.append(entry)


def check_int8_cpu(results, n):
    import torch

    entry = {"name": "matmul int8", "device": "cpu", "dtype": "int8"}
    if not hasattr(torch, "_int_mm"):
        entry.update(ok=None, error="torch has no int8 matmul (torch._int_mm)")
        results.append(entry)
        return
    try:
        a, b = (torch.randint(-128, 127, (n, n), dtype=torch.int8) for _ in range(2))
        out = torch._int_mm(a, b)
        entry["ok"] = bool(torch.equal(out.long(), a.long() @ b.long()))
        entry["rel_error"] = 0.0 if entry["ok"] else 1.0
        seconds, span = timed(lambda: torch._int_mm(a, b), "cpu", 5)
        entry.update(seconds=seconds, span_seconds=span)
        entry["tops"] = 2 * n**3 / seconds / 1e12
    except Exception as error:  # not every build has a CPU int8 kernel
        entry.update(ok=None, error=f"{type(error).__name__}: {error}"[:300])
    results.append(entry)


def pci_location(props):
    """'0000:19:00' (domain:bus:device), as NVML says it: a CUDA ordinal matched to NVML's index (None: no PCI fields)."""
    try:
        return f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}"
    except AttributeError:
        return None


def arch_list(torch) -> list:
    """The GPU architectures (sm_90, gfx942; an XPU build's targets, bmg) this torch was built for, also with no GPU."""
    if getattr(torch.version, "xpu", None):
        return sorted(set(torch.xpu.get_arch_list()))
    flags = getattr(torch._C, "_cuda_getArchFlags", None)
    if flags is not None and (torch.version.cuda or getattr(torch.version, "hip", None)):
        return sorted(set((flags() or "").replace(";", " ").split()))
    return torch.cuda.get_arch_list() if torch.cuda.is_available() else []


def mps_available(torch) -> bool | None:
    """True/False on builds that know MPS (torch.backends.mps), None where torch has no such backend."""
    return bool(backend.is_available()) if (backend := getattr(torch.backends, "mps", None)) is not None else None


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    info_only = "--info" in argv
    companions = [
        name for arg in argv if arg.startswith("--with=") for name in arg.removeprefix("--with=").split(",") if name
    ]
    import torch

    report = _facts(torch)
    if torch.cuda.is_available():
        report["devices"] = [_device(torch, index, info_only, "cuda") for index in range(torch.cuda.device_count())]
    if report["xpu_available"]:
        report["xpu_devices"] = [_device(torch, index, info_only, "xpu") for index in range(torch.xpu.device_count())]
    if companions:
        if __package__:
            from pickvariant.verify.companion_probe import check_companions, loaded_libtorch
        else:  # run as a script in the target interpreter: the module beside this file
            # Not a module of the package here: mypy resolves only the import above.
            from companion_probe import check_companions, loaded_libtorch  # type: ignore[import-not-found,no-redef]
        gpus = report["devices"] + report["xpu_devices"]
        ready = [f"{gpu.get('kind', 'cuda')}:{gpu['index']}" for gpu in gpus if gpu.get("kernel_ran")]
        report["companions"] = check_companions(companions, ready or ["cpu"], torch)
        report["libtorch"] = loaded_libtorch()
    if not info_only:
        torch.manual_seed(0)
        _run_checks(report, quick)
    print(json.dumps(report, allow_nan=False))
    return 0


def _facts(torch: Any) -> dict[str, Any]:
    """What this torch says of itself, before any check runs."""
    return {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),  # a ROCm build's HIP version; None on any other
        "xpu": getattr(torch.version, "xpu", None),  # an XPU build's SYCL version ("20250101"); None on any other
        "xpu_available": bool(torch.xpu.is_available()) if hasattr(torch, "xpu") else None,
        "hsa_override_gfx_version": os.environ.get("HSA_OVERRIDE_GFX_VERSION") or None,  # the GPU reports its target
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        # Set, it caps the dispatch level on purpose (a CPU's AVX-512 left unused): the judge says so instead of failing.
        "aten_cpu_capability": os.environ.get("ATEN_CPU_CAPABILITY") or None,
        "arch_list": arch_list(torch),
        "cuda_available": torch.cuda.is_available(),
        "mps_available": mps_available(torch),
        # None: this torch has no cuDNN (the build repository's SM61 recipes set USE_CUDNN=0).
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "devices": [],
        "xpu_devices": [],
        "checks": [],
    }


def _device(torch: Any, index: int, info_only: bool, kind: str) -> dict[str, Any]:
    """One CUDA (or XPU) device: what it is and, unless only facts are asked, whether a kernel runs there."""
    props = getattr(torch, kind).get_device_properties(index)
    device: dict[str, Any] = {"index": index, "name": props.name, "pci": pci_location(props)}
    if kind == "xpu":  # an Intel GPU has no compute capability; its driver is the one Level Zero names
        device.update(kind="xpu", driver=str(getattr(props, "driver_version", "") or "") or None)
    else:
        device["capability"] = [props.major, props.minor]
        device["gcn_arch"] = getattr(props, "gcnArchName", None) if torch.version.hip else None  # "gfx90a:sramecc+"
    if not info_only:
        try:
            x = torch.arange(1024, device=f"{kind}:{index}", dtype=torch.float32)
            device["kernel_ran"] = bool((x * 2).sum().item() == 1023 * 1024)
        except Exception as error:  # "no kernel image is available" lands here
            device["kernel_ran"] = False
            device["error"] = f"{type(error).__name__}: {error}"[:300]
    return device


def _run_checks(report: dict[str, Any], quick: bool) -> None:
    """The CPU's checks, then the Apple GPU's, then each CUDA or XPU device's where a kernel ran."""
    results = report["checks"]
    # 512: a few ms per fp32 product on 2 cores, long enough for a steady median within --quick's 20 s.
    cpu_n = 512 if quick else 1024
    for dtype in ("fp32", "bf16"):
        check_matmul(results, "cpu", dtype, 128, cpu_n, 5)
    check_int8_cpu(results, cpu_n)
    check_conv(results, "cpu", "fp32", quick)
    for check in results:
        check["dispatch"] = report["cpu_capability"]  # the CPU figures hold only at this dispatch level
    if report["mps_available"]:
        n_time = 1024 if quick else 4096
        for dtype in ("fp32", "fp16"):
            check_matmul(results, "mps", dtype, 256, n_time, 5 if quick else 10)
    for device in report["devices"] + report["xpu_devices"]:
        if not device.get("kernel_ran"):
            continue
        name, cuda = f"{device.get('kind', 'cuda')}:{device['index']}", "kind" not in device
        n_time = 2048 if quick else 8192
        with on_device(name):
            for dtype in ("bf16", "fp16", "tf32", "fp32") if cuda else ("bf16", "fp16", "fp32"):
                check_matmul(results, name, dtype, 256, n_time, 5 if quick else 10, tf32=dtype == "tf32")
            check_conv(results, name, "bf16", quick)
            check_conv(results, name, "fp32", quick)
            if not quick and cuda:  # the layer shapes and the bare loop are timed with cuDNN and CUDA events
                check_conv_layers(results, name)
                device["bare_loop_bf16_tflops"] = bare_loop_bf16(name, 8192, 20)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
