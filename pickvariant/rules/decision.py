"""What the rules answer: the variant chosen (or none), why, and why not each alternative."""

from __future__ import annotations

from enum import StrEnum

from pickvariant._base.records import record
from pickvariant.catalog.model import Branch, Companion, CudaLine, Variant
from pickvariant.machine.gpu import GpuFacts

TYPE_CHECKING = False  # the set's shape is imported only by a decision with companions (detect stays fast)
if TYPE_CHECKING:
    from pickvariant.rules.sets import SetShape


class Kind(StrEnum):
    """Why an alternative lost, as a closed set: what JSON carries and what the short answer sorts by."""

    CPU_LACKS_FLAGS = "cpu_lacks_flags"  # an instruction set this CPU cannot run (SIGILL)
    NO_KERNELS = "no_kernels"  # a GPU architecture whose kernels do not run on a GPU here
    DRIVER = "driver"  # a CUDA line the driver cannot run
    PINNED_OUT = "pinned_out"  # left out by --branch, --torch, --python-version
    ALIGNED = "aligned_branch"  # a branch aligned with another project, chosen only when named
    NOT_BUILT = "not_built"  # what would fit has no variant there
    RANKED_LOWER = "ranked_lower"  # it fits, and lost by the order (PyTorch, CUDA line, Python, architecture, ISA)
    NO_SET = "no_set"  # it fits, but the companions asked for make no set on it
    COMPANION_TORCH_UNKNOWN = "companion_torch_unknown"  # a companion whose torch cannot be known


# The alternatives that would run here: the nearest ones, shown by the short answer.
NEAREST = frozenset({Kind.RANKED_LOWER, Kind.NO_SET})


@record
class Rejection:
    choice: str
    why: str
    kind: Kind


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
