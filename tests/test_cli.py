from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO, cli_runner, cpuinfo_path

from pickvariant.cli.main import app, main

runner = cli_runner()


def detect_json(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict | None, str]:
    result = runner.invoke(app, ["detect", "--format", "json", *args], env=env)
    try:
        data = json.loads(result.stdout)
    except json.JSONDecodeError:
        data = None
    return result.exit_code, data, result.stderr


def test_detect_json_has_the_documented_shape() -> None:
    code, data, _ = detect_json(
        "--cpuinfo", str(cpuinfo_path("linux-unknown-sapphirerapids")), "--gpu", "9.0", "--driver", "580.95.05"
    )
    assert code == 0
    assert set(data) >= {"schema_version", "hardware", "workload", "recommendation", "reasons", "rejected", "sources"}
    assert data["schema_version"] == 2
    assert data["recommendation"] == {
        "package": "pytorch-python313-cuda13_1-sm90-avx512",
        "branch": "pytorch-2.10-python313",
        "torch": "2.10.0",
        "cuda": "13.1",
        "gpu_arch": "sm90",
        "cpu_isa": "avx512",
        "python": "3.13",
        "platform": "x86_64-linux",
        "nixpkgs_rev": "2017d6d515f8a7b289fe06d3a880a7ec588c3900",
        "cudnn": True,
    }
    hardware = data["hardware"]
    assert hardware["arch"] == "x86_64" and "avx512_bf16" in hardware["cpu"]["flags"]
    assert hardware["gpus"][0]["compute_capability"] == "9.0"
    assert hardware["driver"]["version"] == "580.95.05"
    assert all(set(r) == {"choice", "why", "kind", "subject", "facts"} for r in data["rejected"])
    axes = {"branch", "cuda_line", "cpu_isa", "gpu_arch", "package", "companion"}
    assert all(r["subject"]["axis"] in axes and r["subject"]["name"] in r["choice"] for r in data["rejected"])
    no_kernels = next(r for r in data["rejected"] if r["kind"] == "no_kernels")
    assert no_kernels["why"].startswith(f"GPU {no_kernels['facts']['gpu']}: {no_kernels['facts']['refusal']}")
    assert data["sources"]["driver"] == "--driver"


def test_cpu_only_recommendation_has_null_cuda_and_gpu_arch() -> None:
    code, data, _ = detect_json("--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--no-gpu")
    assert code == 0
    assert data["recommendation"]["cuda"] is None and data["recommendation"]["gpu_arch"] is None


def test_workload_changes_the_instruction_set() -> None:
    args = ("--cpuinfo", str(cpuinfo_path("linux-rocky8.5-zen4")), "--gpu", "sm_89")
    picks = {
        w: detect_json(*args, "--workload", w)[1]["recommendation"]["cpu_isa"] for w in ("general", "int8", "bf16")
    }
    assert picks == {"general": "avx512", "int8": "avx512vnni", "bf16": "avx512bf16"}


def test_no_compatible_variant_exits_3_with_one_line_and_still_prints_the_reasons() -> None:
    code, data, stderr = detect_json("--cpuinfo", str(cpuinfo_path("linux-amazon-neoverse_n1")), "--gpu", "8.7")
    assert code == 3
    assert data["recommendation"] is None and data["hints"]
    assert stderr.count("\n") == 1 and stderr.startswith("pickvariant: no compatible variant")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--gpu", "ninety"], "not a compute capability"),
        (["--driver", "latest"], "not an NVIDIA driver version"),
        (["--gpu", "9.0", "--no-gpu"], "contradict"),
        (["--cpuinfo", str(REPO / "README.md")], "not a /proc/cpuinfo dump"),
        (["--cpuinfo", "/nonexistent/cpuinfo"], "cannot read"),
        (["--torch", "1.0.0"], "no branch matches"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(args, message) -> None:
    result = runner.invoke(app, ["detect", "--format", "json", *args])
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert "Traceback" not in result.output


def test_override_order_is_flag_then_environment_then_detection() -> None:
    env = {
        "PICKVARIANT_GPU": "8.0",
        "PICKVARIANT_DRIVER": "570.124.06",
        "PICKVARIANT_CPUINFO": str(cpuinfo_path("linux-rhel7-haswell")),
    }
    code, data, _ = detect_json(env=env)
    assert code == 0
    assert data["recommendation"]["package"] == "pytorch-python313-cuda12_9-sm80-avx2"
    assert data["sources"]["gpus"].startswith("PICKVARIANT_GPU") and data["sources"]["driver"].startswith(
        "PICKVARIANT_DRIVER"
    )
    code, data, _ = detect_json("--gpu", "9.0", "--driver", "580.65.06", env=env)
    assert data["recommendation"]["package"] == "pytorch-python313-cuda13_1-sm90-avx2"
    assert data["sources"]["gpus"] == "--gpu" and data["sources"]["cpu"].startswith("PICKVARIANT_CPUINFO")


def test_environment_can_say_there_is_no_gpu() -> None:
    code, data, _ = detect_json("--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), env={"PICKVARIANT_GPU": "none"})
    assert code == 0 and data["recommendation"]["package"] == "pytorch-python313-cpu-avx2"


def test_stated_gpu_without_driver_says_the_driver_is_assumed() -> None:
    code, data, _ = detect_json("--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "9.0")
    assert code == 0 and data["hardware"]["driver_assumed"] is True
    assert any("assum" in note for note in data["notes"])


def test_text_and_markdown_formats_show_the_recommendation_and_reasons() -> None:
    args = ["detect", "--cpuinfo", str(cpuinfo_path("linux-rhel9-neoverse_v2")), "--gpu", "9.0"]
    text = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert (
        text.exit_code == 0 and "pytorch-python313-cuda13_1-sm90-armv9" in text.stdout and "exact match" in text.stdout
    )
    markdown = runner.invoke(app, [*args, "--format", "markdown"])
    assert markdown.exit_code == 0 and "**Recommendation:** `pytorch-python313-cuda13_1-sm90-armv9`" in markdown.stdout


def test_list_filters_and_counts() -> None:
    result = runner.invoke(app, ["list", "--branch", "pytorch-2.10-python313", "--cuda", "13.1", "--format", "json"])
    assert result.exit_code == 0 and len(json.loads(result.stdout)["variants"]) == 60
    rows = json.loads(runner.invoke(app, ["list", "--gpu", "sm_121", "--cuda", "13.1", "--format", "json"]).stdout)[
        "variants"
    ]
    assert {r["package"] for r in rows} == {
        "pytorch-python313-cuda13_1-sm121-armv8_2",
        "pytorch-python313-cuda13_1-sm121-armv9",
    }
    rows = json.loads(
        runner.invoke(
            app, ["list", "--gpu", "cpu", "--isa", "avx", "--python-version", "3.11", "--format", "json"]
        ).stdout
    )["variants"]
    assert [(r["package"], r["branch"]) for r in rows] == [("pytorch-python311-cpu-avx", "pytorch-2.9-python311")]
    rows = json.loads(runner.invoke(app, ["list", "--platform", "aarch64-darwin", "--format", "json"]).stdout)[
        "variants"
    ]
    assert len(rows) == 8 and {r["gpu_arch"] for r in rows} == {"mps"} and {r["cpu_isa"] for r in rows} == {None}
    assert set(rows[0]) >= {
        "package",
        "branch",
        "torch",
        "python",
        "cuda",
        "gpu_arch",
        "cpu_isa",
        "platform",
        "nixpkgs_rev",
        "cudnn",
    }
    assert runner.invoke(app, ["list", "--isa", "avx1024"]).exit_code == 2
    assert runner.invoke(app, ["list", "--branch", "cuda-99"]).exit_code == 2
    table = runner.invoke(app, ["list", "--gpu", "6.1"], env={"COLUMNS": "250"})
    assert table.exit_code == 0 and "pytorch-python313-cuda12_8-sm61-avx2" in table.stdout


def test_console_entry_turns_usage_errors_into_one_line(capsys) -> None:
    assert main(["detect", "--workload", "fp64"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pickvariant:") and err.count("\n") == 1


def test_installed_command_runs_as_a_module() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pickvariant",
            "detect",
            "--format",
            "json",
            "--cpuinfo",
            str(cpuinfo_path("linux-rhel7-haswell")),
            "--no-gpu",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["recommendation"]["package"] == "pytorch-python313-cpu-avx2"


@pytest.mark.parametrize("value", ["0", "-5", "nan"])
def test_install_timeout_must_be_above_zero(value) -> None:
    result = runner.invoke(app, ["install", "--no-gpu", "--dry-run", "--timeout", value])
    assert result.exit_code == 2 and "--timeout" in result.stderr


# --- issue 10: what a new user sees --------------------------------------------------------


def _pickvariant(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "pickvariant", *args],
        capture_output=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_json_output_is_the_same_bytes_whatever_the_hash_seed() -> None:
    # Sets iterate in hash order, which changes between runs: the order of `rejected` must not.
    args = (
        "detect",
        "--format",
        "json",
        "--cpuinfo",
        str(cpuinfo_path("linux-unknown-sapphirerapids")),
        "--gpu",
        "9.0",
        "--driver",
        "580.95.05",
    )
    outputs = {_pickvariant(*args, env={"PYTHONHASHSEED": str(seed)}).stdout for seed in (0, 1, 2, 3)}
    assert len(outputs) == 1
    rejected = json.loads(outputs.pop())["rejected"]
    assert [r["choice"] for r in rejected if "prefers" in r["why"]] == [
        "pytorch-python313-cuda13_1-sm90-avx512bf16",
        "pytorch-python313-cuda13_1-sm90-avx512vnni",
        "pytorch-python313-cuda13_1-sm90-avx2",
        "pytorch-python313-cuda13_1-sm90-avx",
    ]


def test_list_never_cuts_a_package_name_in_a_pipe() -> None:
    done = _pickvariant("list", "--all", env={"COLUMNS": "80"})
    catalog_packages = {
        row["package"] for row in json.loads(_pickvariant("list", "--format", "json").stdout)["variants"]
    }
    listed = {line.split()[0] for line in done.stdout.decode().splitlines()[1:] if line.startswith("pytorch-")}
    assert len(done.stdout.decode().splitlines()) > 900
    assert listed == catalog_packages and "…" not in done.stdout.decode()


def test_list_on_an_80_column_terminal_shows_whole_package_names() -> None:
    import os
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(
            sys.executable,
            [sys.executable, "-m", "pickvariant", "list", "--branch", "pytorch-2.10-python313", "--cuda", "12.9"],
            {**os.environ, "COLUMNS": "80", "TERM": "dumb"},
        )
    shown = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.waitpid(pid, 0)
    text = shown.decode()
    assert "pytorch-python313-cuda12_9-sm120-avx512bf16" in text and "pytorch-python313-cuda12_9-sm61-avx" in text
    assert "pytorch…" not in text and "not shown, for want of width" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_usage_errors_are_one_line_that_says_where_help_is() -> None:
    done = _pickvariant("detect", "--frob")
    assert done.returncode == 2
    # click words it "No such option: --frob" or "No such option '--frob'." depending on its version.
    line = done.stderr.decode()
    assert line.startswith("pickvariant: No such option") and "--frob" in line and line.count("\n") == 1
    assert line.endswith(" (see 'pickvariant detect --help')\n")


def test_recipe_with_a_package_checks_its_branch() -> None:
    ambiguous = runner.invoke(app, ["recipe", "pytorch-python313-cpu-avx2", "--generate"])
    assert (
        ambiguous.exit_code == 2
        and "built on 4 branches" in ambiguous.stderr
        and "name one with --branch" in ambiguous.stderr
    )
    wrong = runner.invoke(app, ["recipe", "pytorch-python311-cuda12_9-sm70-avx2", "--generate", "--branch", "main"])
    assert wrong.exit_code == 2 and "not built on branch main" in wrong.stderr
    right = runner.invoke(
        app, ["recipe", "pytorch-python313-cpu-avx2", "--generate", "--branch", "pytorch-2.10-python313"]
    )
    assert right.exit_code == 0 and 'version = "2.10.0"' in right.stdout and "2017d6d" not in right.stdout


def test_report_takes_only_its_documented_formats() -> None:
    result = runner.invoke(app, ["report", "--format", "text"])
    assert result.exit_code == 2 and "'text' is not one of 'markdown', 'json'" in result.stderr


def test_cpu_rates_are_shown_in_units_that_show_them() -> None:
    from pickvariant.verify.judge import rate_text

    assert rate_text({"tflops": 0.0012}) == "1.2 GFLOP/s"
    assert rate_text({"tops": 0.0004}) == "0.4 GOP/s"
    assert rate_text({"tflops": 766.5}) == "766.50 TFLOP/s"
    assert rate_text({"name": "matmul int8"}) == "-"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["detect", "--cuda", "11.8", "--no-gpu"], "--cuda 11.8: no branch left by the pins builds it"),
        (["list", "--cuda", "11.8"], "--cuda 11.8: no variant of the catalog is built with it"),
        (["list", "--python-version", "3.10"], "--python-version 3.10: no variant of the catalog is built for it"),
        (["list", "--branch", "nope"], "unknown branch 'nope'"),
        (
            ["recipe", "pytorch-python313-cpu-avx2", "--generate", "--cuda", "12.9"],
            "--cuda chooses a CUDA line of the branch for --all",
        ),
        (["verify", "--branch", "main"], "--branch names the branch of --package"),
    ],
)
def test_a_pin_that_matches_nothing_is_bad_input_everywhere(argv, says) -> None:
    result = cli_runner().invoke(app, argv)
    assert result.exit_code == 2 and says in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "env", "says"),
    [
        (["detect", "--no-gpu"], {"PICKVARIANT_PYTHON": "3.99"}, "no branch matches PICKVARIANT_PYTHON 3.99"),
        (
            ["detect", "--no-gpu"],
            {"PICKVARIANT_PYTHON": "foo"},
            "PICKVARIANT_PYTHON 'foo': not a version; write it as 3.12",
        ),
        (
            ["detect", "--no-gpu", "--python-version", "foo"],
            {},
            "--python-version 'foo': not a version; write it as 3.12",
        ),
        (
            ["install", "--dry-run", "--no-gpu"],
            {"PICKVARIANT_FLOX_ORG": "x"},
            "PICKVARIANT_FLOX_ORG 'x' is not a Flox organisation name",
        ),
        (["verify", "--org", "acme"], {}, "--org probes a published variant: name it with --package"),
        (["detect", "--format", "yaml"], {}, "Invalid value for '--format': 'yaml' is not one of"),
    ],
)
def test_a_message_names_where_the_bad_value_came_from(argv, env, says, monkeypatch) -> None:
    for name in ("PICKVARIANT_PYTHON", "PICKVARIANT_FLOX_ORG"):
        monkeypatch.delenv(name, raising=False)
    from pickvariant.cli.main import main as cli_main

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(argv)
    assert code == 2 and says in err.getvalue(), err.getvalue()


def test_help_shows_metavariables_a_user_reads() -> None:
    shown = cli_runner().invoke(app, ["detect", "--help"]).stdout
    for option in (
        "--cpuinfo FILE",
        "--gpu CC",
        "--driver VERSION",
        "--cuda X.Y",
        "--gpu-index N",
        "--python-version X.Y",
    ):
        assert option in shown
    assert "list[str]" not in shown and "<str>" not in shown


@pytest.mark.parametrize("width", [80, 46, 30])
def test_list_fits_a_narrow_terminal_and_never_cuts_a_name(catalog, width) -> None:
    import io

    from rich.console import Console

    from pickvariant.sources.flox.commandline.listing import print_rows
    from pickvariant.sources.flox.commands.list_rows import select, summary

    text = summary(catalog, width)
    # Only a single word longer than the terminal (the repository's address) may stand out; nothing is cut.
    assert all(len(line) <= width or " " not in line.strip() for line in text.splitlines())
    assert all(branch.name in text for branch in catalog.branches)
    rows = select(catalog)[:40]
    out = io.StringIO()
    print_rows(rows, Console(file=out, width=width, force_terminal=True, color_system=None))
    shown = out.getvalue()
    assert all(row["package"] in shown for row in rows)


def test_a_stated_machines_report_reads_its_interpreters_files_and_probes_nothing_here(tmp_path) -> None:
    """`report --cpuinfo DUMP --python PATH` describes another machine: its interpreter's torch is what its files
    name; torch is never imported (here: importing it would leave a mark) and nothing of this machine's probe (its
    CPU capability, its GPUs' health) is in the report."""
    from conftest import fresh_venv

    python = fresh_venv(tmp_path / "venv", with_pip=False)
    (site,) = (tmp_path / "venv").glob("lib/python*/site-packages")
    marker = tmp_path / "imported"
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (site / "torch-2.14.1+cu126.dist-info").mkdir()
    (site / "torch-2.14.1+cu126.dist-info" / "METADATA").write_text("Name: torch\nVersion: 2.14.1+cu126\n")
    haswell = str(cpuinfo_path("linux-rhel7-haswell"))
    for source in ([], ["--source", "wheels"]):
        stated = runner.invoke(app, ["report", *source, "--cpuinfo", haswell, "--no-gpu", "--python", str(python)])
        assert stated.exit_code == 0, stated.output
        assert "Installed PyTorch: torch 2.14.1+cu126, read from the interpreter's files" in stated.stdout
        assert "CPU capability" not in stated.stdout and not marker.exists()


def test_report_describes_another_machine_with_nothing_of_this_one() -> None:
    import platform

    haswell = str(cpuinfo_path("linux-rhel7-haswell"))
    stated = runner.invoke(
        app, ["report", "--cpuinfo", haswell, "--gpu", "9.0", "--driver", "580.95.05"], env={"PICKVARIANT_GPU": ""}
    )
    assert stated.exit_code == 0, stated.output
    text = stated.stdout
    assert "Describes a stated machine" in text and "Recommendation: `pytorch-python313-cuda13_1-sm90-avx2`" in text
    assert "kernel not stated" in text and platform.release() not in text
    assert "memory not stated" in text and "CUDA not stated" in text and "?" not in text
    assert "Installed PyTorch: not stated" in text and "Last install" not in text
    data = json.loads(
        runner.invoke(
            app,
            ["report", "--format", "json"],
            env={
                "PICKVARIANT_CPUINFO": haswell,
                "PICKVARIANT_DRIVER": "580.00",
                "PICKVARIANT_DRIVER_CUDA": "13.0",
                "PICKVARIANT_GPU": "11.0",
            },
        ).stdout
    )
    assert data["described"] and data["system"] == {"kernel": None, "python": None} and data["installed_torch"] is None
    assert data["hardware"]["driver"] == {"version": "580.00", "cuda": "13.0"}
    # GPUs not stated are not this machine's: unknown, so nothing is recommended and --gpu/--no-gpu are asked for.
    unstated = runner.invoke(app, ["report", "--cpuinfo", haswell])
    assert "GPUs: not stated" in unstated.stdout and "Recommendation: none" in unstated.stdout
    no_cpu = runner.invoke(app, ["report", "--gpu", "9.0"], env={"PICKVARIANT_CPUINFO": ""})
    assert no_cpu.exit_code == 2 and no_cpu.stderr.startswith(
        "pickvariant: --cpuinfo: a described machine needs its CPU"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--cpuinfo", "linux-rhel9-neoverse_v2", "--gpu", "10.1", "--driver", "575.57.08", "--driver-cuda", "12.9"],
        ["--cpuinfo", "linux-rhel7-haswell", "--gpu", "12.0", "--driver", "535.104.05"],
        ["--cpuinfo", "linux-rhel7-haswell", "--gpu", "8.6", "--gpu", "7.5", "--driver", "470.57.02"],
    ],
)
def test_the_same_what_if_gives_the_same_bytes_whatever_the_hash_seed(argv) -> None:
    """Sets and dicts of strings iterate in the hash seed's order: no answer may depend on it."""
    import subprocess
    import sys

    argv = [
        str(cpuinfo_path(value)) if index and argv[index - 1] == "--cpuinfo" else value
        for index, value in enumerate(argv)
    ]
    outputs = {
        subprocess.run(
            [sys.executable, "-m", "pickvariant", "detect", "--format", "json", *argv],
            capture_output=True,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in range(1, 9)
    }
    assert len(outputs) == 1 and b'"hints"' in next(iter(outputs))


def test_detect_json_without_with_imports_nothing_it_does_not_need() -> None:
    """detect --format json answers without typer, rich, typing, dataclasses or the companions (issue 28: "detect without
    --with exactly as fast as before"): each of these costs milliseconds on every call (benchmarks/detect_speed.py)."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "pickvariant",
            "detect",
            "--format",
            "json",
            "--no-gpu",
            "--cpuinfo",
            str(cpuinfo_path("linux-rhel7-haswell")),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-500:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    for module in (
        "typer",
        "rich",
        "typing",
        "dataclasses",
        "tempfile",
        "pickvariant.sources.flox.recipes.stack",
        "pickvariant.sources.wheels",
        "pickvariant.rules.pairing",
        "pickvariant.rules.sets",
        "jsonschema",
    ):
        assert module not in imported, module


def test_the_default_answer_fits_one_screen_and_explain_shows_every_alternative() -> None:
    """An H100 host: the answer, the facts, why, and the nearest alternatives (those that would run here); the
    eleven GPU architectures whose kernels cannot run there only with --explain. JSON carries every rejection's kind."""
    machine = ["--cpuinfo", str(cpuinfo_path("linux-unknown-sapphirerapids")), "--gpu", "9.0", "--driver", "580.95.05"]
    short = runner.invoke(app, ["detect", *machine], env={"COLUMNS": "80"})
    assert short.exit_code == 0, short.output
    assert len(short.stdout.splitlines()) <= 30, short.stdout
    assert "Recommendation: pytorch-python313-cuda13_1-sm90-avx512" in short.stdout
    assert "Nearest alternatives" in short.stdout and "pytorch-python313-cuda13_1-sm90-avx512bf16: fits" in short.stdout
    assert "GPU architecture sm61" not in short.stdout and "pickvariant detect --explain" in short.stdout
    full = runner.invoke(app, ["detect", *machine, "--explain"], env={"COLUMNS": "80"})
    assert "GPU architecture sm61: GPU 0: kernels for 6.1 do not run on 9.0" in full.stdout
    assert "not chosen" in full.stdout and "--explain" not in full.stdout
    data = json.loads(runner.invoke(app, ["detect", "--format", "json", *machine]).stdout)
    kinds = {rejection["choice"]: rejection["kind"] for rejection in data["rejected"]}
    assert kinds["GPU architecture sm61"] == "no_kernels"
    assert kinds["pytorch-python313-cuda13_1-sm90-avx512bf16"] == "ranked_lower"
    assert kinds["branch pytorch-2.9-vllm-0.15.1"] == "aligned_branch"


@pytest.mark.parametrize(
    "command", [["detect"], ["list"], ["recipe"], ["install"], ["plan"], ["verify"], ["report"], ["catalog", "sync"]]
)
def test_every_option_shows_a_metavariable_a_person_reads(command) -> None:
    """`--org ORG`, `--dir DIR`, `--timeout SECONDS`: never the type typer would print (`<str>`, `<path>`, `<float>`)."""
    shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "120"}).stdout
    options = [line for line in shown.splitlines() if line.lstrip().startswith("-")]
    assert options and not [line for line in options if re.search(r"<(str|path|int|float|list\[str\])>", line)], shown
    # Arguments too: `REPO [COMPANION]...`, `INPUT`, `PACKAGE`, never `<list[str]>` beside them.
    assert not re.search(r"<(str|path|list\[str\])>", shown), shown


def test_a_narrow_list_drops_what_the_name_says_before_the_cuda_line_and_labels_its_blocks(catalog) -> None:
    """At 80 columns the CUDA line (whether the driver runs it) outlasts the instruction set the name already shows; a
    terminal narrower than a package name gets one block per variant, each value with its column's name."""
    import io

    from rich.console import Console

    from pickvariant.sources.flox.commandline.listing import print_rows
    from pickvariant.sources.flox.commands.list_rows import select

    rows = select(catalog)[:20]
    out = io.StringIO()
    print_rows(rows, Console(file=out, width=80, force_terminal=True, color_system=None))
    caption = next(line for line in out.getvalue().splitlines() if "not shown, for want of width" in line)
    hidden = caption.split("not shown, for want of width: ", 1)[1]
    assert "cpu_isa" in hidden and "cuda" not in hidden.replace("cuda_", "")
    narrow = io.StringIO()
    print_rows(rows[:2], Console(file=narrow, width=30, force_terminal=True, color_system=None))
    text = narrow.getvalue()
    assert f"branch: {rows[0]['branch']}" in text.replace("\n", " ") and "cpu_isa:" in text.replace("\n", " ")


def test_markdown_and_a_companion_listing_summarise_as_the_text_view_does() -> None:
    summary = runner.invoke(app, ["list", "--format", "markdown"])
    assert summary.exit_code == 0 and "| branch | torch | python | cuda lines | variants | kind |" in summary.stdout
    assert "pytorch-python313-" not in summary.stdout  # no row of the 967
    rows = runner.invoke(app, ["list", "--format", "markdown", "--branch", "main"])
    assert "| package | branch |" in rows.stdout and "pytorch-python313-cuda12_8-sm90-avx512" in rows.stdout
    vision = runner.invoke(app, ["list", "--project", "torchvision"])
    assert (
        vision.stdout.startswith("226 torchvision recipes") and "build-torchvision pytorch-2.10: 111" in vision.stdout
    )
    assert "torchvision-python313-" not in vision.stdout
    every = runner.invoke(app, ["list", "--project", "torchvision", "--all"])
    assert "torchvision-python313-cuda13_1-sm90-avx512" in every.stdout


# Flags that mean something else in another command, each with its own declaration: what differs, and why.
_OWN_MEANINGS = {
    "--format": "each command's own formats (detect's requirements and pyproject, report's markdown first, ...)",
    "--branch": "list filters by it, recipe and verify name a package's branch by it, detect and install pin by it",
    "--python": "verify probes that interpreter, report reports on it, detect and install read its environment",
    "--python-version": "list filters its rows by it, detect and install pin the choice by it",
    "--cuda": "list and recipe --all filter by it, detect and install pin the choice by it",
    "--gpu": "list filters by an architecture, detect and install state a GPU",
    "--platform": "list filters rows by a Nix system, detect, install and the rest state a machine's platform (wheels)",
    "--with": "verify imports companions, recipe writes their recipes, detect and install choose them",
    "--org": "install installs from that organisation, verify probes its package, plan names it in its commands",
    "--label": "detect and verify label their JSON, install finds its node in a plan by it",
    "--package": "install installs it, verify checks the probed torch against it",
    "--build": "install builds instead of installing, detect chooses a set as install --build would build it",
    "--compact": "detect's and verify's JSON on one line, each its own document",
    "--force": "install replaces a torch, recipe and catalog overwrite files",
    "--all": "list shows every row, recipe generates every variant",
    "-o": "catalog sync and recipe write their own files",
    "--output": "catalog sync and recipe write their own files",
    "--check": "catalog sync and catalog wheels compare their own output",
}


def _options_by_command() -> dict[str, dict[str, str]]:
    import typer.main

    group = typer.main.get_command(app)
    found: dict[str, dict[str, str]] = {}
    for name, command in sorted(group.commands.items()):  # type: ignore[attr-defined]
        commands = sorted(command.commands.items()) if hasattr(command, "commands") else [(name, command)]
        for sub, leaf in commands:
            for param in leaf.params:
                for flag in getattr(param, "opts", []):
                    found.setdefault(flag, {})[sub if sub == name else f"{name} {sub}"] = param.help or ""
    return found


def test_an_option_shared_by_commands_has_one_declaration_and_one_help() -> None:
    """--source, --wheel-index, the machine's options: the same words in every command's --help, from one
    declaration; a flag whose help differs between commands is one that means something else there, said above."""
    drifted = {
        flag: helps
        for flag, helps in _options_by_command().items()
        if len(set(helps.values())) > 1 and flag not in _OWN_MEANINGS
    }
    assert drifted == {}
    for flag in ("--source", "--wheel-index", "--cpuinfo", "--gpu-index", "--driver"):
        assert len(_options_by_command()[flag]) >= 3, flag  # shared, so the check above did check it


def test_every_variable_is_named_by_its_options_help_from_the_declaration() -> None:
    """An option's variable is part of its declaration (cli/options.py), and its help names it from there: typed
    into no help text by hand, so it cannot be left out of one command's (report's --wheel-index once was)."""
    from pathlib import Path

    from pickvariant._base import settings
    from pickvariant.cli import options

    declared = [value for value in vars(options).values() if isinstance(value, options.Option)]
    for option in declared:
        if option.variable is not None:
            assert option.variable in settings.ALL and option.described.count(option.variable) == 1
    by_flag = _options_by_command()
    for option in declared:
        if option.variable is not None:
            helps = [help for help in by_flag[option.flag].values() if option.help.rstrip(".") in help]
            assert helps and all(f"(env {option.variable}" in help for help in helps), option.flag
    parsers = [module for module in Path(REPO, "pickvariant").rglob("*.py") if "import typer" in module.read_text()]
    assert len(parsers) > 5  # the command line's modules, and a source's own commands'
    for module in parsers:
        if module.name != "options.py":
            assert "(env PICKVARIANT_" not in module.read_text(), module.name


@pytest.mark.parametrize("output", [[], ["--format", "json"]], ids=["text", "json"])
def test_the_wheels_answer_imports_no_cli_framework_and_prints_what_the_typer_cli_prints(output: list[str]) -> None:
    """Issue 52: `detect --source wheels`, text or JSON, answers without typer, click or rich (the answer needs none
    of them), and its output is the typer CLI's, byte for byte."""
    import subprocess
    import sys

    args = ["detect", "--source", "wheels", *output, "--gpu", "9.0", "--driver", "580.95.05"]
    args += ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell"))]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pickvariant", *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-500:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not {"typer", "click", "rich"} & imported
    through_typer = runner.invoke(app, args, env={"COLUMNS": "100"})
    assert through_typer.exit_code == 0 and through_typer.stdout == done.stdout
