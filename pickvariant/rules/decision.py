"""What the rules answer: the variant chosen (or none), why, and why not each alternative."""

from __future__ import annotations

from pickvariant._base.records import record
from pickvariant.catalog.model import Branch, Companion, CudaLine, Variant
from pickvariant.machine.gpu import GpuFacts

TYPE_CHECKING = False  # the set's shape is imported only by a decision with companions (detect stays fast)
if TYPE_CHECKING:
    from pickvariant.rules.sets import SetShape


@record
class Rejection:
    choice: str
    why: str


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
