"""What a build runs on, whichever source made it: the one record a program reads of the answer.

A Build says which machine a build can run on, in pickvariant's own words for that machine (its `os` and `arch` as
the machine's facts report them, the CPython tags, the CPU instruction set it requires or none where ATen
dispatches at run time, the compute capabilities it carries SASS and PTX for, its CUDA line and the driver floor that
line needs) with the torch release and the label a person installs it by. `origin` is the source's own record (a
Flox variant, a wheel build), which nothing outside that source reads. The two built-in sources make one each
(`of_variant` here; a source of prebuilt builds through sources/prebuilt.py's `published`, which fills what a
published build adds: its index, whether an installer gets it with no index named); detect's JSON shows it as
`build`, beside the source's own `recommendation`.
"""

from __future__ import annotations

from pickvariant._base.records import keyword_record
from pickvariant._base.versions import ComputeCapability, DriverVersion, cpython_tag
from pickvariant.sources import accelerator
from pickvariant.sources.accelerator import Code, Cuda, GpuCode

TYPE_CHECKING = False  # typing stays off detect's path
if TYPE_CHECKING:
    from typing import Any

    from pickvariant.sources.build import Catalog, Variant


@keyword_record
class Build:
    source: str  # the registered source that made it: "flox", "wheels", …
    label: str  # how a person names it: "pytorch-python313-cuda13_1-sm90-avx512 (pytorch-2.10-python313)"
    torch: str  # the release, "2.10.0"
    os: str
    arch: str
    platform: str  # the source's own name for its platform: a Nix system ("x86_64-linux"), "linux-x86_64"
    python: tuple[str, ...]  # the CPython tags it is built for: "cp313", "cp314t"
    cpu_isa: str | None  # the instruction set it requires; None: ATen picks its CPU kernels at run time
    # Its GPU code, of one family (sources/accelerator.py's sum type): CUDA's SASS and PTX on a CUDA line, AMD's gfx
    # targets on a ROCm release, Intel's devices; None: a CPU build (an MPS build on macOS).
    code: Code | None
    origin: object = None  # the source's own record (a Flox variant); not shown
    # What a published build adds (sources/prebuilt.py): the index it is on ("cu126"; empty for a build made from a
    # recipe), whether an installer gets it with no index named (PyPI's own torch), where its facts come from.
    index: str = ""
    default_index: bool = False
    sources: tuple[str, ...] = ()
    note: str = ""

    @property
    def family(self) -> str:
        """The family of GPU its code is for (sources/accelerator.py): "cuda", "rocm", "xpu", "mps" or "cpu"."""
        if self.code is not None:
            return str(self.code.family)
        return accelerator.MPS if self.os == "darwin" else accelerator.CPU

    # Its CUDA code, read as the rules of NVIDIA GPUs read it: none where it is of another family.
    @property
    def cuda(self) -> str | None:
        return self.code.line if isinstance(self.code, Cuda) else None

    @property
    def sass(self) -> tuple[ComputeCapability, ...]:
        return self.code.sass if isinstance(self.code, Cuda) else ()

    @property
    def ptx(self) -> tuple[ComputeCapability, ...]:
        return self.code.ptx if isinstance(self.code, Cuda) else ()

    @property
    def cuda_min_driver(self) -> DriverVersion | None:
        return self.code.min_driver if isinstance(self.code, Cuda) else None

    @property
    def ptx_known(self) -> bool:
        return self.code.ptx_known if isinstance(self.code, Cuda) else True

    @property
    def gpu_code(self) -> GpuCode | None:
        """Its code for another vendor's GPUs than NVIDIA's (AMD's, Intel's), where it is of such a family."""
        return None if self.code is None or isinstance(self.code, Cuda) else self.code

    def as_json(self) -> dict[str, Any]:
        """The same keys for every source (detect's `build`)."""
        return {
            "source": self.source,
            "label": self.label,
            "torch": self.torch,
            "os": self.os,
            "arch": self.arch,
            "python": list(self.python),
            "cpu_isa": self.cpu_isa,
            "sass": [str(capability) for capability in self.sass],
            "ptx": [str(capability) for capability in self.ptx],
            "cuda": self.cuda,
            "cuda_min_driver": None if self.cuda_min_driver is None else str(self.cuda_min_driver),
            **({"gpu_code": self.gpu_code.as_json()} if self.gpu_code is not None else {}),
        }


def of_variant(variant: Variant, catalog: Catalog, source: str) -> Build:
    """A Flox variant: one Python, its one GPU architecture's SASS (no PTX: build.py ptx_archs), its CUDA line's
    floor. An MPS build carries no CUDA code."""
    platform = catalog.platforms[variant.platform]
    line = catalog.cuda_line(variant)
    return Build(
        source=source,
        label=variant.label,
        torch=variant.torch,
        os=platform.os,
        arch=platform.arch,
        platform=variant.platform,
        python=(cpython_tag(variant.python),),
        cpu_isa=variant.cpu_isa,
        code=None
        if variant.cuda is None
        else Cuda(
            line=variant.cuda,
            sass=tuple(catalog.gpu_archs[name].compute_capability for name in variant.sass_archs),
            ptx=tuple(catalog.gpu_archs[name].compute_capability for name in variant.ptx_archs),
            min_driver=None if line is None else line.min_driver,
        ),
        origin=variant,
    )
