"""The output corpus: command lines whose every output byte a refactor must keep (tests/test_output_corpus.py).

Each case is run as its own `python -m pickvariant` process in an empty folder holding copies of the CPU dumps
and the cluster input, with the machine stated (never this one's), HOME and the cache in that folder, COLUMNS
fixed and no terminal: what it prints depends on pickvariant alone. `python tests/test_output_corpus.py --write`
records the outputs again; do that only for a change of output that is meant, and review the diff.
"""

from __future__ import annotations

HASWELL = ["--cpuinfo", "haswell"]
SAPPHIRE = ["--cpuinfo", "sapphirerapids"]
GRACE = ["--cpuinfo", "neoverse_v2"]
H100 = [*SAPPHIRE, "--gpu", "9.0", "--driver", "580.95.05"]
GTX1080 = [*HASWELL, "--gpu", "6.1", "--driver", "550.54.14"]
MIXED = [*HASWELL, "--gpu", "8.0", "--gpu", "8.9", "--driver", "570.86.10"]
OLD_DRIVER = [*SAPPHIRE, "--gpu", "9.0", "--driver", "470.57.02"]
CPU_ONLY = [*HASWELL, "--no-gpu"]
WHEELS = ["--source", "wheels"]

CASES: dict[str, list[str]] = {
    "version": ["--version"],
    "detect-h100": ["detect", *H100],
    "detect-h100-json": ["detect", *H100, "--format", "json"],
    "detect-h100-compact": ["detect", *H100, "--compact", "--label", "node-1"],
    "detect-h100-markdown": ["detect", *H100, "--format", "markdown"],
    "detect-h100-explain": ["detect", *H100, "--explain"],
    "detect-h100-with": ["detect", *H100, "--with", "torchvision,torchaudio"],
    "detect-h100-with-json": ["detect", *H100, "--with", "torchvision,torchaudio,vllm", "--format", "json"],
    "detect-h100-pins": ["detect", *H100, "--cuda", "12.8", "--python-version", "3.12", "--format", "json"],
    "detect-gtx1080": ["detect", *GTX1080],
    "detect-gtx1080-json": ["detect", *GTX1080, "--format", "json"],
    "detect-mixed": ["detect", *MIXED, "--explain"],
    "detect-mixed-index": ["detect", *MIXED, "--gpu-index", "1", "--format", "json"],
    "detect-old-driver": ["detect", *OLD_DRIVER],
    "detect-old-driver-json": ["detect", *OLD_DRIVER, "--format", "json"],
    "detect-cpu": ["detect", *CPU_ONLY, "--workload", "inference"],
    "detect-cpu-markdown": ["detect", *CPU_ONLY, "--format", "markdown"],
    "detect-grace": ["detect", *GRACE, "--gpu", "9.0", "--driver", "580.95.05", "--format", "json"],
    "detect-no-torch": ["detect", *H100, "--torch", "1.0"],
    "detect-bad-gpu": ["detect", *HASWELL, "--gpu", "nine"],
    "detect-missing-cpuinfo": ["detect", "--cpuinfo", "no-such-file", "--no-gpu"],
    "list": ["list"],
    "list-json": ["list", "--cuda", "13.0", "--gpu", "sm90", "--format", "json"],
    "list-markdown": ["list", "--branch", "main", "--isa", "avx512", "--format", "markdown"],
    "list-rows": ["list", "--gpu", "sm61"],
    "list-torchvision": ["list", "--project", "torchvision"],
    "recipe-generate": ["recipe", "pytorch-python313-cuda13_0-sm90-avx512", "--generate"],
    "recipe-unknown": ["recipe", "pytorch-nothing", "--generate"],
    "install-dry-run": ["install", *H100, "--org", "acme", "--dry-run"],
    "install-dry-run-json": ["install", *H100, "--org", "acme", "--dry-run", "--format", "json"],
    "install-json-without-dry-run": ["install", *H100, "--org", "acme", "--format", "json"],
    "plan": ["plan", "cluster.jsonl", "--org", "acme"],
    "plan-json": ["plan", "cluster.jsonl", "--format", "json"],
    "plan-markdown": ["plan", "cluster.jsonl", "--org", "acme", "--format", "markdown", "--max-variants", "1"],
    "plan-missing": ["plan", "no-such-file"],
    "verify-no-python": ["verify", "--python", "no-such-python"],
    "report-stated-json": ["report", *H100, "--python", "no-such-python", "--format", "json"],
    # PyTorch's own wheels (issue 52's machines): recorded before its refactor, which must keep them or say why not.
    "wheels-gtx1080": ["detect", *WHEELS, *GTX1080],
    "wheels-gtx1080-r590": ["detect", *WHEELS, *HASWELL, "--gpu", "6.1", "--driver", "590.10"],
    "wheels-v100-json": ["detect", *WHEELS, *HASWELL, "--gpu", "7.0", "--driver", "580.95.05", "--format", "json"],
    "wheels-h100-r580": ["detect", *WHEELS, *H100],
    "wheels-h100-r580-explain": ["detect", *WHEELS, *H100, "--explain"],
    "wheels-h100-r580-requirements": ["detect", *WHEELS, *H100, "--with", "torchvision", "--format", "requirements"],
    "wheels-h100-r580-pyproject": [
        "detect",
        *WHEELS,
        *H100,
        "--with",
        "torchvision,torchaudio",
        "--format",
        "pyproject",
    ],
    "wheels-h100-r550": ["detect", *WHEELS, *SAPPHIRE, "--gpu", "9.0", "--driver", "550.54.15", "--format", "json"],
    "wheels-5090-r565": ["detect", *WHEELS, *HASWELL, "--gpu", "12.0", "--driver", "565.57.01"],
    "wheels-5090-r570": ["detect", *WHEELS, *HASWELL, "--gpu", "12.0", "--driver", "570.86.10", "--format", "json"],
    "wheels-1080-4090": ["detect", *WHEELS, *HASWELL, "--gpu", "6.1", "--gpu", "8.9", "--driver", "580.95.05"],
    "wheels-gh200-json": ["detect", *WHEELS, *GRACE, "--gpu", "9.0", "--driver", "580.95.05", "--format", "json"],
    "wheels-mac": ["detect", *WHEELS, "--cpuinfo", "m2", "--format", "json"],
    "wheels-cpu-markdown": ["detect", *WHEELS, *CPU_ONLY, "--format", "markdown"],
    "wheels-report": ["report", *WHEELS, *H100],
    "wheels-plan": ["plan", "cluster.jsonl", *WHEELS],
    # AMD and Intel GPUs (issue 72): ROCm and XPU wheels by gfx target and device, said as their marks allow.
    "wheels-mi300x": ["detect", *WHEELS, *HASWELL, "--gpu", "gfx942", "--python-version", "3.12"],
    "wheels-gfx906-json": [
        "detect",
        *WHEELS,
        *HASWELL,
        "--gpu",
        "gfx906",
        "--python-version",
        "3.12",
        "--format",
        "json",
    ],
    "wheels-gfx1010": ["detect", *WHEELS, *HASWELL, "--gpu", "gfx1010", "--python-version", "3.12"],
    "wheels-arc-b580-markdown": ["detect", *WHEELS, *HASWELL, "--gpu", "xpu:0xe20b", "--format", "markdown"],
    "wheels-h100-mi300x": ["detect", *WHEELS, *HASWELL, "--gpu", "9.0", "--gpu", "gfx942", "--driver", "580.95.05"],
}

# The cluster `plan` reads: detect lines of stated machines, written once by --write from the cases above.
CLUSTER = {
    "a100-1": [*SAPPHIRE, "--gpu", "8.0", "--driver", "570.86.10"],
    "a100-2": [*SAPPHIRE, "--gpu", "8.0", "--driver", "570.86.10"],
    "l40s-1": [*HASWELL, "--gpu", "8.9", "--driver", "570.86.10"],
    "h100-1": H100,
    "gtx1080": GTX1080,
    "cpu-1": CPU_ONLY,
}
