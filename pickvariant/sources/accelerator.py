"""What GPU code a build carries, by the family of GPU it is for: the sum type every source's builds name.

A build carries code for one family of GPU, or none (uv's `Accelerator`, as a build's side):
- Cuda (NVIDIA): SASS and PTX per compute capability, on a CUDA line whose driver floor it names;
- Rocm (AMD): code objects for a list of gfx targets (PYTORCH_ROCM_ARCH: concrete targets, no feature suffix, no
  generic targets), on a ROCm release whose user space the wheel bundles;
- Xpu (Intel): AOT code for a list of device targets (torch-xpu-ops' AOT_TARGETS: "bmg", "pvc", "mtl-h"), and SPIR-V
  (`spir64`) that the driver compiles for any other Intel GPU at first use;
- MPS (Apple Silicon): a macOS build; the Apple GPU is part of every such Mac;
- none: a CPU build.

Each family has one compatibility check (rules/families.py); a build of a family no check is registered for is left
out of its catalog where it is read, never judged as a CPU build. `inferred`, on a list the facts mark inferred: where
from, said beside an answer that chose it.
"""

from __future__ import annotations

from pickvariant._base.records import keyword_record
from pickvariant._base.versions import ComputeCapability, DriverVersion

CUDA = "cuda"
ROCM = "rocm"
XPU = "xpu"
MPS = "mps"
CPU = "cpu"
# The GPU vendor each family's builds serve (machine/othergpu.py's names; NVIDIA's are machine/gpu.py's GpuFacts).
VENDOR = {CUDA: "nvidia", ROCM: "amd", XPU: "intel"}


@keyword_record
class Cuda:
    line: str  # the CUDA release it is built with: "12.8"
    sass: tuple[ComputeCapability, ...]  # the compute capabilities it carries machine code for
    ptx: tuple[ComputeCapability, ...]  # and PTX for (the driver JIT-compiles it for a newer GPU)
    # The minimum driver of its CUDA line (Linux numbering), where it has one: a GPU may need a newer one (an RTX
    # 5090 needs R570 even for CUDA 12.8), which the answer's reasons and hints say; named for the line, never the
    # machine.
    min_driver: DriverVersion | None
    ptx_known: bool = True  # False: its PTX list is not known, so none is assumed (judged by its SASS alone)
    family = CUDA  # a class attribute, not a field

    @property
    def said(self) -> str:
        return f"CUDA {self.line}"


@keyword_record
class Rocm:
    stack: str  # the ROCm release it is built on: "7.2"
    targets: tuple[str, ...]  # the gfx targets it carries code objects for: "gfx942", "gfx1100"
    inferred: str = ""  # where the list is only inferred: from what; empty where it is documented or verified
    family = ROCM  # a class attribute, not a field

    @property
    def said(self) -> str:
        return f"ROCm {self.stack}"

    def as_json(self) -> dict[str, object]:
        return {"family": self.family, "rocm": self.stack, "targets": list(self.targets), "inferred": self.inferred}


@keyword_record
class Xpu:
    aot: tuple[str, ...]  # the device targets it carries AOT code for: "bmg", "pvc", "lnl-m"
    jit: bool = True  # it carries SPIR-V (spir64), compiled by the driver for any other Intel GPU at first use
    inferred: str = ""
    family = XPU  # class attributes, not fields
    said = "XPU"

    def as_json(self) -> dict[str, object]:
        return {"family": self.family, "aot": list(self.aot), "jit": self.jit, "inferred": self.inferred}


GpuCode = Rocm | Xpu  # another vendor's than NVIDIA's (Build.gpu_code)
Code = Cuda | Rocm | Xpu  # a build's GPU code, of one family (Build.code); None: a CPU or MPS build
# The families the rules judge (rules/families.py registers a check for each one not CUDA's; a test holds the two
# equal): a build whose code is of another is left out of its catalog where the catalog is read.
JUDGED = frozenset({CUDA, ROCM, XPU, MPS, CPU})
