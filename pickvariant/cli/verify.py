"""`pickvariant verify`: the probe in the installed PyTorch; its options."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from pickvariant.cli import options as commandline
from pickvariant.cli.common import declared, exits_on_error, load_catalog
from pickvariant.cli.typer_options import Format

VerifyPython = Annotated[
    str | None,
    typer.Option(
        "--python", metavar="PYTHON", help="The interpreter to probe (default: the last install's, else this one)."
    ),
]

VerifyQuick = Annotated[
    bool, typer.Option("--quick", help="Small sizes: seconds on a CPU machine (about 4 s on 2 cores).")
]

VerifyPackage = Annotated[
    str | None,
    typer.Option(
        "--package", metavar="PACKAGE", help="The variant the interpreter should hold (checks its CPU dispatch level)."
    ),
]

VerifyBranch = Annotated[
    str | None, typer.Option("--branch", metavar="NAME", help="The branch of --package, where several build it.")
]

VerifyOrg = Annotated[
    str | None,
    typer.Option(
        "--org",
        metavar="ORG",
        help="With --package: probe the variant this Flox organisation published, in a throwaway environment (needs a FloxHub login).",
    ),
]


VerifyCompact = Annotated[
    bool, typer.Option("--compact", help="With --format json: the verdict on one line (one line per node, for fleet).")
]


@exits_on_error
@declared()
def verify(
    python: VerifyPython = None,
    quick: VerifyQuick = False,
    package: VerifyPackage = None,
    branch: VerifyBranch = None,
    org: VerifyOrg = None,
    with_: Any = commandline.VERIFY_WITH,
    format: Any = commandline.FORMAT,
    compact: VerifyCompact = False,
    label: Any = commandline.VERIFY_LABEL,
) -> None:
    """Run a matmul/conv probe in the installed PyTorch: kernels for every GPU, correct results, and how fast."""
    from pickvariant.commands import verify as command
    from pickvariant.output import verdict

    named = _label(label, compact, format is Format.json)
    options = command.VerifyOptions(
        python=python, quick=quick, package=package, branch=branch, org=org, with_projects=tuple(with_ or ())
    )
    verified = command.run(options, load_catalog())
    for line in verified.notes:  # beside JSON, on stderr: stdout holds the document alone (one line with --compact)
        typer.echo(f"note: {line}", err=format is Format.json)
    if format is Format.json:
        document = {
            **({"label": named} if named is not None else {}),
            **verdict.verify_json(verified.result),
            "package": verified.package,
            "branch": verified.branch,
        }
        typer.echo(json.dumps(document, separators=(",", ":")) if compact else json.dumps(document, indent=2))
    else:
        typer.echo("\n".join(verdict.verify_lines(verified.result)))
    if not verified.result.passed:
        raise typer.Exit(1)


def _label(label: str | None, compact: bool, as_json: bool) -> str | None:
    """--label (else PICKVARIANT_LABEL), checked as plan checks labels; only where the verdict is JSON."""
    import os

    from pickvariant._base import settings
    from pickvariant._base.errors import BadInput
    from pickvariant._base.request import check_label

    if (compact or label is not None) and not as_json:
        raise BadInput(f"{'--compact' if compact else '--label'}: only with --format json")
    if label is not None:
        return check_label(label, "--label")
    named = settings.setting(os.environ, settings.LABEL)
    return check_label(named, settings.LABEL) if named is not None and as_json else None
