"""`pickvariant verify`: probe an interpreter (the last install's, a named one, or a published variant's in a
throwaway environment) and judge what it ran."""

from __future__ import annotations

import os
import sys

from pickvariant._base.errors import BadInput
from pickvariant._base.records import keyword_record
from pickvariant._base.request import projects_from, projects_or_environment
from pickvariant.sources.build import Catalog, Variant
from pickvariant.verify import judge as verifier


@keyword_record
class VerifyOptions:
    python: str | None = None
    quick: bool = False
    package: str | None = None
    branch: str | None = None
    org: str | None = None
    with_projects: tuple[str, ...] = ()


@keyword_record
class Verified:
    result: verifier.VerifyResult
    notes: tuple[str, ...] = ()
    # The build it probed, as named: --package and its branch, else the last install's (None: not known).
    package: str | None = None
    branch: str | None = None


def default_python() -> list[str]:
    """The last install's interpreter, else this one."""
    from pickvariant.install.state import last_install_python

    return last_install_python() or [sys.executable]


def run(options: VerifyOptions, catalog: Catalog) -> Verified:
    from pickvariant.install.state import last_install_projects

    if options.branch is not None and options.package is None:
        raise BadInput("--branch names the branch of --package: give the package too")
    variant = catalog.variant(options.package, options.branch) if options.package else None
    stated = projects_from(list(options.with_projects), "--with") if options.with_projects else ()
    companions = projects_or_environment(stated, os.environ)
    if not companions and options.python is None and options.org is None:
        companions = last_install_projects()  # the last install's, as its Python
    if options.org is None:
        python = [options.python] if options.python else default_python()
        result = verifier.verify(python, catalog, variant, options.quick, companions=companions)
        package, branch = _probed(variant, options)
        return Verified(result=result, package=package, branch=branch)
    from pickvariant.sources.flox.install.throwaway import published_interpreter

    if variant is None:
        raise BadInput("--org probes a published variant: name it with --package")
    if options.python is not None:
        raise BadInput("--org probes the published --package in a throwaway environment; it takes no --python")
    with published_interpreter(variant, catalog, options.org) as probe:
        result = verifier.verify(probe.python, catalog, variant, options.quick, companions=companions)
    return Verified(result=result, notes=tuple(probe.notes), package=variant.package, branch=variant.branch)


def _probed(variant: Variant | None, options: VerifyOptions) -> tuple[str | None, str | None]:
    """The package and branch the probed interpreter holds: --package's, else the last install's where verify probed
    the last install's interpreter."""
    from pickvariant.install.state import last_install

    if variant is not None:
        return variant.package, variant.branch
    record = last_install() if options.python is None else None
    return (str(record["package"]), str(record["branch"])) if record else (None, None)
