"""pickvariant.api and the entry point's typer-free `detect --format json`."""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, cpuinfo_path, generated
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pickvariant import api
from pickvariant._base.errors import BadInput
from pickvariant.cli import entry, plainline
from pickvariant.cli import options as commandline

HASWELL = cpuinfo_path("linux-rhel7-haswell")
SAPPHIRE_RAPIDS = cpuinfo_path("linux-unknown-sapphirerapids")
CLI_LIBRARIES = ("typer", "click", "rich", "pydantic")


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, **(env or {})},
    )


def test_recommend_to_json_is_what_detect_prints() -> None:
    choice = api.recommend(cpuinfo=SAPPHIRE_RAPIDS, gpus=["9.0"], driver="580.95.05", workload="bf16")
    printed = _run(
        "-m",
        "pickvariant",
        "detect",
        "--format",
        "json",
        "--cpuinfo",
        str(SAPPHIRE_RAPIDS),
        "--gpu",
        "9.0",
        "--driver",
        "580.95.05",
        "--workload",
        "bf16",
    )
    assert printed.returncode == 0, printed.stderr
    assert choice.to_json() == json.loads(printed.stdout)
    assert choice.build is not None and choice.build.package == json.loads(printed.stdout)["recommendation"]["package"]


@pytest.mark.parametrize("gpus", [["6.1"], ["9.0"], []], ids=["gtx1080", "h100", "cpu-only"])
def test_recommend_with_the_wheels_source_is_what_detect_source_wheels_prints(gpus) -> None:
    machine = ["--cpuinfo", str(HASWELL), "--driver", "580.95.05", "--python-version", "3.12"]
    machine += [arg for gpu in gpus for arg in ("--gpu", gpu)] or ["--no-gpu"]
    printed = _run("-m", "pickvariant", "detect", "--source", "wheels", "--format", "json", *machine)
    assert printed.returncode == 0, printed.stderr
    choice = api.recommend(cpuinfo=HASWELL, gpus=gpus, driver="580.95.05", python_version="3.12", source="wheels")
    assert choice.to_json() == json.loads(printed.stdout)
    assert choice.build is not None and choice.build.label == json.loads(printed.stdout)["recommendation"]["torch"]
    # PICKVARIANT_SOURCE chooses it as it does for detect; a source that is none is refused naming the argument.
    by_variable = api.recommend(cpuinfo=HASWELL, gpus=gpus, driver="580.95.05", python_version="3.12",
                                env={**os.environ, "PICKVARIANT_SOURCE": "wheels"})  # fmt: skip
    assert by_variable.to_json() == choice.to_json()
    # The same question as one Request, to any source (what detect asks): the same answer.
    request = api.Request(cpuinfo=HASWELL, gpus=tuple(gpus), no_gpu=not gpus, driver="580.95.05", python="3.12")
    assert api.answer(request, source="wheels").to_json() == choice.to_json()
    assert api.answer(request).to_json()["source"] == "flox"
    # One record answers for every source (issue 52): the same fields, each source's facts in its answer.
    recipes = api.answer(request)
    assert type(recipes) is type(choice) is api.Recommendation
    assert (recipes.source, choice.source) == ("flox", "wheels") and recipes.build is recipes.decision.build
    assert recipes.catalog is recipes.answer.hardware and choice.answer.environment is None  # a stated machine
    with pytest.raises(AttributeError, match="'wheels' answers from its own builds"):
        choice.catalog  # noqa: B018  # the wheels' answer has no catalog of recipes
    with pytest.raises(BadInput, match=r"^source 'conda'"):
        api.recommend(cpuinfo=HASWELL, gpus=gpus, source="conda")


def test_recommend_for_wheels_reports_a_misfit_as_a_value() -> None:
    t4 = api.recommend(cpuinfo=HASWELL, gpus=["7.5"], driver="470.256.02", python_version="3.12", source="wheels")
    assert t4.build is None and "470.256.02" in str(t4.no_variant_error())


def test_recommend_states_no_gpu_pins_and_reports_a_misfit_as_a_value() -> None:
    cpu_only = api.recommend(cpuinfo=HASWELL, gpus=[])
    assert cpu_only.build is not None and cpu_only.build.package == "pytorch-python313-cpu-avx2"
    pinned = api.recommend(cpuinfo=HASWELL, gpus=["8.0"], driver="580.95.05", cuda="12.9")
    assert pinned.build is not None and pinned.build.cuda.startswith("12.9")
    kepler = api.recommend(cpuinfo=HASWELL, gpus=["3.5"], driver="470.256.02")
    assert kepler.build is None and "compute capability 3.5" in str(kepler.no_variant_error())
    with pytest.raises(BadInput):
        api.recommend(cpuinfo=HASWELL, gpus=["8.0"], workload="fp64")


def test_the_docstring_example_runs(monkeypatch) -> None:
    monkeypatch.chdir(REPO)  # its path is relative to the checkout
    failures, tried = doctest.testmod(api, raise_on_error=False)
    assert tried >= 3 and failures == 0


@pytest.mark.parametrize(
    "code",
    [
        "import pickvariant.api",
        f"import pickvariant.api as a; a.recommend(cpuinfo={str(SAPPHIRE_RAPIDS)!r}, gpus=['9.0'], driver='580.95.05').to_json()",
    ],
)
def test_the_library_loads_no_cli_or_terminal_library(code: str) -> None:
    done = _run(
        "-c", f"{code}\nimport sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] in {CLI_LIBRARIES!r}))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_detect_json_as_a_process_imports_no_cli_library() -> None:
    done = _run(
        "-X",
        "importtime",
        "-m",
        "pickvariant",
        "detect",
        "--format",
        "json",
        "--compact",
        "--label",
        "n1",
        "--cpuinfo",
        str(HASWELL),
        "--no-gpu",
    )
    assert done.returncode == 0 and json.loads(done.stdout)["label"] == "n1"
    assert not _imported_roots(done.stderr) & set(CLI_LIBRARIES)
    # The text answer too (issue 52): plain lines, no CLI library; only --explain's whole tree goes through the typer
    # CLI and draws with rich's Tree.
    text = _run("-X", "importtime", "-m", "pickvariant", "detect", "--cpuinfo", str(HASWELL), "--no-gpu")
    assert text.returncode == 0 and text.stdout.startswith("Recommendation: ")
    assert not _imported_roots(text.stderr) & set(CLI_LIBRARIES)
    # A source named on the command line is answered there too, with the same document as the default source's.
    named = _run(
        "-X", "importtime", "-m", "pickvariant", "detect", "--source", "flox", "--format", "json", "--compact",
        "--label", "n1", "--cpuinfo", str(HASWELL), "--no-gpu",
    )  # fmt: skip
    assert named.returncode == 0 and named.stdout == done.stdout
    assert not _imported_roots(named.stderr) & set(CLI_LIBRARIES)
    tree = _run("-X", "importtime", "-m", "pickvariant", "detect", "--explain", "--cpuinfo", str(HASWELL), "--no-gpu")
    assert tree.returncode == 0 and "rich.tree" in _imported(tree.stderr)


# pathlib imports urllib.parse and, with it, ipaddress: 7-8 ms of detect's 55-60 on a 2-core VM, the margin between
# its answer and archspec's host() (issue 52). detect's answers read their files by path text.
@pytest.mark.parametrize(
    "args",
    [
        ["--format", "json"],
        [],
        ["--source", "wheels", "--format", "json"],
        ["--source", "wheels", "--format", "json", "--python", sys.executable],
        ["--source", "wheels"],
    ],
    ids=["recipes-json", "recipes-text", "wheels-json", "wheels-json-python", "wheels-text"],
)
def test_detects_answers_import_no_pathlib(args: list[str]) -> None:
    # What the interpreter's own start imports (a site .pth may import pathlib) is not detect's to save.
    started = _imported(_run("-X", "importtime", "-c", "pass").stderr)
    done = _run("-X", "importtime", "-m", "pickvariant", "detect", *args, "--cpuinfo", str(HASWELL), "--no-gpu")
    assert done.returncode == 0, done.stderr
    assert not {"pathlib", "urllib.parse", "ipaddress"} & (_imported(done.stderr) - started)
    # On a machine with the DRM or KFD classes (most Linux hosts with a GPU of any vendor) the AMD and Intel GPUs
    # are read too (machine/othergpu.py): still no pathlib. The real RX 7900 XTX capture stands for that sysfs.
    sysfs = {"PICKVARIANT_SYSFS": str(REPO / "tests" / "fixtures" / "sysfs" / "radeon-rx7900xtx")}
    read = _run("-X", "importtime", "-m", "pickvariant", "detect", *args, "--cpuinfo", str(HASWELL), env=sysfs)
    assert read.returncode == 0 and "pickvariant.machine.othergpu" in _imported(read.stderr), read.stderr
    assert not {"pathlib", "urllib.parse", "ipaddress"} & (_imported(read.stderr) - started)


def _imported(importtime: str) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in importtime.splitlines() if line.startswith("import time:")}


def _imported_roots(importtime: str) -> set[str]:
    return {name.split(".")[0] for name in _imported(importtime)}


def test_the_typer_cli_declares_detect_exactly_as_commandline_does() -> None:
    """One declaration: the typer command's options are commandline.DETECT's flags, kinds and help texts."""
    import typer.main

    from pickvariant.cli.main import app

    command = typer.main.get_command(app).commands["detect"]  # type: ignore[attr-defined]
    declared = {option.flag: option for option in commandline.DETECT.values()}
    options = {param.opts[0]: param for param in command.params}
    assert list(options) == list(declared)
    for flag, param in options.items():
        option = declared[flag]
        assert (param.is_flag, param.multiple, param.help) == (
            option.kind == "flag",
            option.repeatable,
            option.described,
        ), flag
        if option.choices:
            assert _choices(param) == option.choices, flag


def _choices(param) -> tuple[str, ...]:
    """A choice option's values: click's Choice type, or (typer 0.27+, its own core) the Enum it was declared with."""
    if hasattr(getattr(param, "type", None), "choices"):
        return tuple(param.type.choices)
    return tuple(member.value for member in param.type_descriptor.annotation)


def _outcome(main, argv: list[str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv)
    return code, stdout.getvalue(), stderr.getvalue()


VALUES = {
    "--workload": ["general", "int8", "bf16", "fp64", "GENERAL"],
    "--format": ["json", "json", "json", "text", "markdown", "yaml"],
    "--cpuinfo": [str(HASWELL), str(SAPPHIRE_RAPIDS), "/nonexistent/cpuinfo", ""],
    "--gpu": ["9.0", "8.0", "sm_90", "3.5", "9.0a", "", "hopper"],
    "--driver": ["580.95.05", "550.54.15", "580.x", ""],
    "--torch": ["2.10", "2.9.1", "9.9"],
    "--cuda": ["12.9", "13.0", "11.8"],
    "--gpu-index": ["0", "1", "7", "x", "01", "-1", "+1"],
    "--branch": ["pytorch-2.10-python313", "pytorch-2.9-vllm-0.15.1", "nope"],
    "--python-version": ["3.13", "3.12", "2.7"],
    "--label": ["n1", "rack 3 node 7", "-x", "ü"],
    # The wheels source: its JSON answer takes the fast path too (issue 52), and must print what the CLI prints.
    "--source": ["wheels", "wheels", "flox", "pip"],
    "--wheel-index": ["https://mirror.example/whl", "https://u:SECRET@mirror.example/whl", "https://h/whl?x=1"],
    "--python": [sys.executable, "/nonexistent/python"],
}
FLAGS = ["--no-gpu", "--compact", "--help", "--bogus", "extra", "--", "--format=json", "--gpu=9.0", "--label="]


@given(
    st.lists(st.tuples(st.sampled_from(sorted(VALUES)), st.integers(0, 9)), max_size=4, unique_by=lambda pair: pair[0]),
    st.lists(st.sampled_from(["--no-gpu", "--compact"]), max_size=2),
    st.one_of(st.none(), st.none(), st.none(), st.tuples(st.sampled_from(FLAGS), st.integers(0, 12))),
    st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_entry_answers_every_detect_line_exactly_as_the_typer_cli(
    options: list, flags: list, junk, with_json: bool
) -> None:
    """Whatever the fast path takes, it prints what the CLI prints; whatever it declines, the CLI gets."""
    from pickvariant.cli.main import main as cli_main

    generated("entry: detect command lines, fast path vs typer CLI")
    argv = ["detect"] + (["--format", "json"] if with_json else [])
    for option, pick in options:
        argv += [option, VALUES[option][pick % len(VALUES[option])]]
    argv += flags
    if junk is not None:
        argv.insert(1 + junk[1] % len(argv), junk[0])
    fast = plainline.parse_plain_detect(argv) is not None
    event("fast path" if fast else "typer CLI")
    env_before = dict(os.environ)
    assert _outcome(entry.main, argv) == _outcome(cli_main, argv), (argv, fast)
    assert dict(os.environ) == env_before


def test_a_plain_detect_json_line_takes_the_fast_path() -> None:
    taken = plainline.parse_plain_detect(
        [
            "detect",
            "--format=json",
            "--compact",
            "--label",
            "n1",
            "--gpu",
            "9.0",
            "--gpu=8.0",
            "--driver",
            "580.95.05",
            "--gpu-index",
            "1",
            "--workload",
            "int8",
        ]
    )
    assert (
        taken is not None and taken["gpu"] == ["9.0", "8.0"] and taken["gpu_index"] == 1 and taken["workload"] == "int8"
    )
    for declined in (
        ["detect"],
        ["detect", "--format", "json", "--help"],
        ["detect", "--format", "json", "--driver", "--no-gpu"],
        ["detect", "--format", "json", "--format", "json"],
        ["detect", "--format", "json", "--gpu-index", "x"],
        ["list", "--format", "json"],
        ["detect", "--format", "text"],
    ):
        assert plainline.parse_plain_detect(declined) is None, declined


@pytest.mark.parametrize(
    "argv",
    [
        [
            "detect",
            "--format",
            "json",
            "--cpuinfo",
            str(HASWELL),
            "--gpu",
            "3.5",
            "--driver",
            "470.256.02",
        ],  # no variant: exit 3
        ["detect", "--format", "json", "--cpuinfo", str(HASWELL), "--gpu", "hopper"],  # bad input: exit 2
        ["detect", "--format", "json", "--compact", "--label", "n7", "--cpuinfo", str(HASWELL), "--no-gpu"],
    ],
)
def test_fast_path_exits_and_lines_match_the_cli(argv: list[str]) -> None:
    from pickvariant.cli.main import main as cli_main

    assert plainline.parse_plain_detect(argv) is not None
    fast, typer_cli = _outcome(entry.main, argv), _outcome(cli_main, argv)
    assert fast == typer_cli
    code, _, stderr = fast
    assert (code, stderr.count("\n")) in ((0, 0), (2, 1), (3, 1))


def test_the_default_catalog_is_the_one_the_variable_names_now_not_the_first_one_loaded(tmp_path, monkeypatch) -> None:
    """A program (or a test) that names another PICKVARIANT_CATALOG after the packaged one was loaded gets that one,
    and the packaged one again once the variable is gone: each path is loaded once, none stands in for another."""
    import shutil

    from pickvariant import api

    monkeypatch.delenv("PICKVARIANT_CATALOG", raising=False)
    shipped = api.default_catalog()
    site = tmp_path / "site-catalog.json"
    shutil.copyfile(REPO / "catalog.json", site)
    monkeypatch.setenv("PICKVARIANT_CATALOG", str(site))
    named = api.default_catalog()
    assert named is not shipped and api.default_catalog() is named
    monkeypatch.delenv("PICKVARIANT_CATALOG")
    assert api.default_catalog() is shipped
