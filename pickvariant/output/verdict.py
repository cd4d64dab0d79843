"""What `verify` shows of a probe's judgement: lines for a terminal, or one JSON document."""

from __future__ import annotations

from typing import Any

from pickvariant._base.text import visible
from pickvariant.verify.judge import VerifyResult, finding_text


def verify_json(result: VerifyResult) -> dict[str, Any]:
    """What `verify --format json` prints (schema_version 1)."""
    return {
        "schema_version": 1,
        "passed": result.passed,
        "reasons": list(result.reasons),
        "probe": result.probe,
        "checks": list(result.findings),
        "speed": list(result.speed),
        "gpu_health": list(result.health),
    }


def verify_lines(result: VerifyResult) -> list[str]:
    """What `verify` prints: the verdict, its reasons, every check, the speed figures."""
    lines = (
        [f"verify: {'PASS' if result.passed else 'FAIL'}"]
        + [f"- {reason}" for reason in result.reasons]
        + [f"- {finding_text(check)}" for check in result.findings]
        + [f"speed: {line}" for line in result.speed]
    )
    # A reason may carry the probe's own stderr: shown on its line, its control characters visible.
    return [visible(line) for line in lines]
