"""What the rules answer: the variant chosen (or none), why, and why not each alternative."""

from __future__ import annotations

from pickvariant._base.records import record
from pickvariant.catalog.model import Branch, Companion, CudaLine, Variant
from pickvariant.machine.gpu import GpuFacts

TYPE_CHECKING = False  # typing and the set's shape stay off detect's path
if TYPE_CHECKING:
    from typing import Final, Literal

    from pickvariant.rules.sets import SetShape

    KindName = Literal[
        "cpu_lacks_flags",
        "no_kernels",
        "driver",
        "pinned_out",
        "aligned_branch",
        "not_built",
        "ranked_lower",
        "no_set",
        "companion_torch_unknown",
    ]


class Kind:
    """Why an alternative lost, as a closed set: what JSON carries and what the short answer sorts by.

    Plain string constants typed as a Literal rather than an Enum: detect makes a score of rejections per answer,
    and an Enum member costs an attribute lookup through the metaclass each time (benchmarks/detect_speed.py)."""

    CPU_LACKS_FLAGS: Final = "cpu_lacks_flags"  # an instruction set this CPU cannot run (SIGILL)
    NO_KERNELS: Final = "no_kernels"  # a GPU architecture whose kernels do not run on a GPU here
    DRIVER: Final = "driver"  # a CUDA line the driver cannot run
    PINNED_OUT: Final = "pinned_out"  # left out by --branch, --torch, --python-version
    ALIGNED: Final = "aligned_branch"  # a branch aligned with another project, chosen only when named
    NOT_BUILT: Final = "not_built"  # what would fit has no variant there
    RANKED_LOWER: Final = "ranked_lower"  # it fits, and lost by the order (PyTorch, CUDA line, Python, arch, ISA)
    NO_SET: Final = "no_set"  # it fits, but the companions asked for make no set on it
    COMPANION_TORCH_UNKNOWN: Final = "companion_torch_unknown"  # a companion whose torch cannot be known


# The alternatives that would run here: the nearest ones, shown by the short answer.
NEAREST = frozenset({Kind.RANKED_LOWER, Kind.NO_SET})


@record
class Rejection:
    choice: str
    why: str
    kind: KindName


@record
class Decision:
    variant: Variant | None
    branch: Branch | None
    reasons: tuple[str, ...]
    rejected: tuple[Rejection, ...]
    hints: tuple[str, ...] = ()
    targets: tuple[GpuFacts, ...] = ()
    line: CudaLine | None = None
    # Every variant that can run here, best first: what `plan` may give this machine, in detect's order.
    candidates: tuple[Variant, ...] = ()
    # With --with: the companions chosen with `variant`, one per project asked for, on its PyTorch,
    # and how they make one environment with one PyTorch (what install installs and plan builds).
    companions: tuple[Companion, ...] = ()
    set_shape: SetShape | None = None


def dedupe(rejected: list[Rejection]) -> list[Rejection]:
    return list(dict.fromkeys(rejected))
