"""The layers of ARCHITECTURE.md hold: `lint-imports` checks pyproject.toml's contracts over every import,
function-level ones included, so an arrow that runs back up fails the suite (and CI)."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO, require

# import-linter 2.6-2.x colours its report even into a pipe: the tests read it without the colour codes.
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _report(done: subprocess.CompletedProcess[str]) -> str:
    return _SGR.sub("", done.stdout)


def _lint_imports() -> str:
    found = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    require(Path(found).exists(), "import-linter's lint-imports is not installed (pip install -e '.[test]')")
    return found


def test_every_import_keeps_the_layers_and_makes_no_cycle() -> None:
    done = subprocess.run(
        [_lint_imports(), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in _report(done)


def test_the_contracts_catch_an_arrow_that_runs_back_up(tmp_path) -> None:
    """The contracts are not empty words: a copy of the package in which the CPU facts import the output
    layer and typer, and the stages import the picker back, breaks exactly those contracts."""
    copy = tmp_path / "repo"
    shutil.copytree(
        REPO / "pickvariant", copy / "pickvariant", ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.nix")
    )
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    with (copy / "pickvariant" / "machine" / "cpu.py").open("a") as cpu:
        cpu.write(
            "\n\ndef _drawn():\n    import typer  # noqa: F401\n    from pickvariant.output import present  # noqa: F401\n"
        )
    with (copy / "pickvariant" / "rules" / "stages.py").open("a") as explain:
        explain.write("\nfrom pickvariant.rules import pick as _back  # noqa: E402, F401\n")
    done = subprocess.run(
        [_lint_imports(), "--no-cache"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(copy)},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pickvariant.machine.cpu -> pickvariant.output.present" in _report(done)
    assert "The pipeline's layers: each imports only the layers below it BROKEN" in _report(done)
    assert "No module imports one that imports it back, at any depth BROKEN" in _report(done)
    assert "pickvariant.machine.cpu -> typer" in _report(done)
    assert ".stages -> .pick" in _report(done)


def test_every_file_pickvariant_reads_at_run_time_is_in_the_package_or_carried_into_the_wheel() -> None:
    """A wheel holds the package directory and what pyproject.toml force-includes into it: every file pickvariant reads
    at run time is one or the other (the catalog and the recipe templates sit at the top of the checkout)."""
    import tomllib

    from pickvariant.sources.flox.install.floxcontract import CONTRACT
    from pickvariant.sources.flox.recipes import generated
    from pickvariant.sources.flox.recipes.load import DATA_DIR, default_catalog_path
    from pickvariant.sources.flox.recipes.render import TEMPLATES_DIR
    from pickvariant.sources.hardware_json import hardware_facts_path
    from pickvariant.verify.probe_run import PROBE

    package = (REPO / "pickvariant").resolve()
    carried = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    force_included = {(REPO / source).resolve() for source in carried["force-include"]}
    files = [
        Path(default_catalog_path({})),
        Path(hardware_facts_path()),
        Path(DATA_DIR) / "catalog.schema.json",
        generated.DATA,
        CONTRACT,
        PROBE,
        *TEMPLATES_DIR.glob("*.nix"),
    ]
    assert len(files) == 10  # with the four templates: cpu, cuda12, cuda13, companion
    for path in files:
        resolved = path.resolve()
        assert path.is_file(), path
        assert resolved.is_relative_to(package) or any(
            resolved == source or resolved.is_relative_to(source) for source in force_included
        ), path
    assert Path(default_catalog_path({})).resolve() == (REPO / "catalog.json").resolve()  # the design card's top level
    assert TEMPLATES_DIR.resolve() == (REPO / "recipes").resolve()


# The modules over 400 lines today, each at most its size here: the list may only shrink (split a module by concept
# and take it off), never grow, and a module not on it stays at 400 lines or under.
OVER_400_TODAY = {
    "pickvariant/verify/probe.py": 447,
}


def test_no_module_is_over_400_lines_but_todays_exceptions_which_may_only_shrink() -> None:
    """A module a newcomer can read: one concept each (ARCHITECTURE.md says which)."""
    sizes = {
        path.relative_to(REPO).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (REPO / "pickvariant").rglob("*.py")
    }
    too_long = {name: n for name, n in sizes.items() if n > OVER_400_TODAY.get(name, 400)}
    assert too_long == {}, "split these by concept (tests/test_layers.py OVER_400_TODAY may only shrink)"
    assert set(OVER_400_TODAY) <= set(sizes), "a module on the list is gone: take it off"


def test_no_function_is_over_60_lines() -> None:
    """A function a newcomer can read at once: split by concept (a stage, a record built from parts, a table)."""
    long = {}
    for path in (REPO / "pickvariant").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    long[f"{path.relative_to(REPO)}:{node.name}"] = length
    assert long == {}


def test_the_package_holds_only_packages_and_its_entry_modules() -> None:
    """The command line, the rules and the sources are found by folder: no top-level module but these."""
    modules = {path.name for path in (REPO / "pickvariant").glob("*.py")}
    assert modules == {"__init__.py", "__main__.py", "api.py"}


def test_no_module_outside_a_source_package_is_named_after_a_source_of_prebuilt_builds() -> None:
    """The stages, the commands and the output that serve a catalog of prebuilt builds serve every such source (the
    wheels, or one registered): a module named after the wheels source belongs in sources/wheels/."""
    package = REPO / "pickvariant"
    named = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "wheel" in path.stem and path.relative_to(package).parts[:2] != ("sources", "wheels")
    )
    assert named == []


def test_only_the_pipelines_read_a_sources_kind() -> None:
    """Each kind of source is answered by one Pipeline chosen once (pipelines.of): the library, the commands, the
    command line and the output ask it, never `source.pipeline` (a third kind is then one module, not ten edits).
    The registry names each kind's options; commands/installation.py chooses an Installation, a command's own."""
    package = REPO / "pickvariant"
    allowed = {"pipelines/__init__.py", "sources/registry.py", "commands/installation.py"}
    readers = sorted(
        name
        for path in package.rglob("*.py")
        if (name := path.relative_to(package).as_posix()) not in allowed
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr == "pipeline"
    )
    assert readers == []


def test_every_sources_decision_goes_through_the_one_pick() -> None:
    """The shared stages run in one place, rules/pick.py, for every catalog shape: a walk (rules/*_walk.py) does its
    own part of each stage and never runs the driver's judging or the machine stage again, and its hints decide again
    through the pick (`again`), never by calling a walk's entry."""
    rules = REPO / "pickvariant" / "rules"
    shared = {"driver_as_judged", "machine"}
    calls = {
        (path.name, node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", ""))
        for path in rules.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
    }
    assert {(name, call) for name, call in calls if call in shared} == {("pick.py", c) for c in shared}
    entries = {"pick_prebuilt", "decide"}
    assert {name for name, call in calls if call in entries} <= {"cluster_plan.py"}


# Every place outside the sources that reads which kind a source is (issue 71): each file and how many reads it
# makes. A new read fails this test; a read removed is removed here too. The aim is fewer: a kind's own behaviour
# belongs in its source's plug-in.
KIND_READS = {
    "api.py": 1,
    "pipelines/recipes.py": 1,
}
_KIND_ATTRIBUTES = {"pipeline", "prebuilt"}
_KIND_CONSTANTS = {"RECIPES", "PREBUILT"}
_KIND_TYPES = {"PrebuiltDecision", "RecipeDecision", "PrebuiltCatalog", "Catalog", "PrebuiltPlan", "RecipePlan"}


def _reads_of_a_kind(node: ast.AST) -> bool:
    """An attribute naming a kind (`.pipeline`, `.prebuilt`), the kind constants, an isinstance on a kind's record,
    or a comparison with a kind's name ("recipes", "prebuilt", "builds")."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        return node.attr in _KIND_ATTRIBUTES or node.attr in _KIND_CONSTANTS  # `.pipeline`, `registry.RECIPES`
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        return node.id in _KIND_CONSTANTS
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance" and len(node.args) == 2:
        kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
        return any(getattr(kind, "id", getattr(kind, "attr", "")) in _KIND_TYPES for kind in kinds)
    if isinstance(node, ast.Compare):
        return any(
            isinstance(c, ast.Constant) and c.value in ("recipes", "prebuilt", "builds")
            for c in [node.left, *node.comparators]
        )
    return False


def test_every_read_of_a_sources_kind_outside_the_sources_is_counted() -> None:
    package = REPO / "pickvariant"
    found: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        if name.startswith("sources/"):
            continue  # a source's own package, and the registry that names the kinds
        reads = sum(1 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if _reads_of_a_kind(node))
        if reads:
            found[name] = reads
    assert found == KIND_READS
