"""What-ifs and input (issue 42): a described machine is described whole, a driver version is one, one rule per
option whichever front end answers, the spellings users type (`-d`, commas), and a Ctrl-C at any moment."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO, cli_runner, cpuinfo_path

from pickvariant._base.text import markdown_text
from pickvariant.cli import entry
from pickvariant.cli.main import app

runner = cli_runner()
HASWELL = str(cpuinfo_path("linux-rhel7-haswell"))
SPR = str(cpuinfo_path("linux-unknown-sapphirerapids"))


def refused(capsys, *args: str, env: dict[str, str] | None = None, monkeypatch=None) -> str:
    """The one line both front ends end a refused command with (entry.main: the console script's own path)."""
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    assert entry.main(list(args)) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("pickvariant: ") and captured.out == ""
    return line


def test_another_machines_cpu_beside_this_machines_gpus_is_said_first(monkeypatch) -> None:
    """--cpuinfo of another machine, GPUs detected here (the NVML stand-in's H100): every output says, first, which
    facts are whose; stating the GPUs makes the note go."""
    from fakenvml import H200, fake_nvml

    from pickvariant.machine import gpu

    monkeypatch.setattr(gpu, "nvml_library_loads", lambda: True)
    monkeypatch.setattr(gpu, "nvml_binding", lambda: fake_nvml([H200], driver="580.95.05"))
    mixed = "the CPU is --cpuinfo's, the GPUs and driver are this machine's (detected)"
    for source in (["--source", "flox"], ["--source", "wheels", "--python-version", "3.12"]):
        # Every source's text and Markdown answer says it before the machine's facts, and keeps the other notes.
        text = runner.invoke(app, ["detect", "--cpuinfo", HASWELL, *source], env={"COLUMNS": "100"})
        assert text.stdout.splitlines()[1].startswith("  warning: the CPU is --cpuinfo's, the GPUs and driver are this")
        markdown = runner.invoke(app, ["detect", "--cpuinfo", HASWELL, "--format", "markdown", *source]).stdout
        assert f"**Warning:** {mixed}" in markdown.split("This machine")[0].split("Hardware")[0], source
        # A driver assumed is a note too: every source's Markdown carries each note the JSON has.
        assumed = ["detect", "--cpuinfo", HASWELL, "--gpu", "9.0", *source]
        notes = json.loads(runner.invoke(app, [*assumed, "--format", "json"]).stdout)["notes"]
        markdown = runner.invoke(app, [*assumed, "--format", "markdown"]).stdout
        assert notes and all(markdown_text(note) in markdown for note in notes), source
    answer = json.loads(runner.invoke(app, ["detect", "--format", "json", "--cpuinfo", HASWELL]).stdout)
    assert answer["notes"][0].startswith("the CPU is --cpuinfo's, the GPUs and driver are this machine's (detected)")
    stated = json.loads(runner.invoke(app, ["detect", "--format", "json", "--cpuinfo", HASWELL, "--no-gpu"]).stdout)
    assert not any("this machine's (detected)" in note for note in stated["notes"])


@pytest.mark.parametrize("driver", ["999", "0", "580.65.06.1", "latest", "58", "1580.65.06"])
def test_what_is_no_driver_version_is_refused_naming_the_option(driver, capsys, monkeypatch) -> None:
    for args, env, named in (
        (["--driver", driver], None, "--driver"),
        ([], {"PICKVARIANT_DRIVER": driver}, "PICKVARIANT_DRIVER"),
    ):
        line = refused(capsys, "detect", "--cpuinfo", SPR, "--gpu", "9.0", *args, env=env, monkeypatch=monkeypatch)
        assert line.startswith(f"pickvariant: {named}: ") and "not an NVIDIA driver version" in line
        monkeypatch.delenv("PICKVARIANT_DRIVER", raising=False)


@pytest.mark.parametrize("source", [[], ["--source", "wheels"]], ids=["recipes", "wheels"])
def test_a_branch_alone_is_read_as_its_first_release_and_said(source) -> None:
    """`--driver 580` (as users write a branch): every R580 driver is at least R580's first release, 580.65.06 (CUDA
    13.0's GA driver and the CUDA 13 family's minimum, the facts say), so the answer is the one for 580.65.06 and a
    note says how it was read. A branch whose first release the facts do not give (R570) is read as its .00, said."""
    args = ["detect", "--format", "json", *source, "--cpuinfo", SPR, "--gpu", "9.0"]
    answer = json.loads(runner.invoke(app, [*args, "--driver", "580"]).stdout)
    (note,) = [note for note in answer["notes"] if note.startswith("--driver 580 ")]
    assert "read as 580.65.06, the first release of branch R580" in note
    full = json.loads(runner.invoke(app, [*args, "--driver", "580.65.06"]).stdout)
    assert answer["recommendation"] == full["recommendation"] and full["recommendation"]["cuda"].startswith("13.")
    older = json.loads(runner.invoke(app, [*args, "--driver", "R570"]).stdout)
    (note,) = [note for note in older["notes"] if note.startswith("--driver R570")]
    assert "read as 570.00, the oldest driver of branch R570" in note
    assert older["recommendation"]["cuda"].startswith("12.")  # CUDA 13 needs R580


def test_gpus_are_comma_separated_as_the_variable_and_with_take_them() -> None:
    def answer(*args: str, env: dict[str, str] | None = None) -> dict:
        result = runner.invoke(
            app, ["detect", "--format", "json", "--cpuinfo", SPR, "--driver", "580.95.05", *args], env=env
        )
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    by_comma = answer("--gpu", "8.6,8.9")
    assert [gpu["compute_capability"] for gpu in by_comma["hardware"]["gpus"]] == ["8.6", "8.9"]
    assert by_comma["recommendation"] == answer("--gpu", "8.6", "--gpu", "8.9")["recommendation"]
    assert by_comma["recommendation"] == answer(env={"PICKVARIANT_GPU": "8.6,8.9"})["recommendation"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--build"], "--build: detect builds a set from source"),
        (["--compact", "--format", "text"], "--compact prints the JSON object on one line: it cannot be --format text"),
        (["--compact", "--format", "markdown"], "it cannot be --format markdown"),
        (["--format", "json", "--label", "n" * 257], "--label: 257 characters; a label is 1 to 256"),
        (["--format", "json", "--label", "node\x1b[2J"], "--label: it holds a control character"),
    ],
)
def test_one_rule_per_option_whichever_front_end_answers(args, said, capsys) -> None:
    line = refused(capsys, "detect", "--cpuinfo", HASWELL, "--no-gpu", *args)
    assert said in line
    assert entry.main(["detect", "--cpuinfo", HASWELL, "--no-gpu", "--format", "json", "--label", "n" * 256]) == 0
    assert entry.main(["detect", "--cpuinfo", HASWELL, "--no-gpu", "--build", "--with", "torchaudio"]) in (0, 3)
    capsys.readouterr()


def test_install_takes_flox_spelling_of_the_directory(tmp_path) -> None:
    args = ["install", "--dry-run", "--format", "json", "--cpuinfo", HASWELL, "--no-gpu", "--org", "acme"]
    short = runner.invoke(app, [*args, "-d", str(tmp_path / "env")])
    long = runner.invoke(app, [*args, "--dir", str(tmp_path / "env")])
    assert short.exit_code == 0, short.output
    assert json.loads(short.stdout) == json.loads(long.stdout)


def test_recipe_with_companions_and_no_package_takes_this_machines_recommendation(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PICKVARIANT_CPUINFO", SPR)
    monkeypatch.setenv("PICKVARIANT_GPU", "9.0")
    monkeypatch.setenv("PICKVARIANT_DRIVER", "580.95.05")
    result = runner.invoke(app, ["recipe", "--with", "torchaudio", "--generate", "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "no PACKAGE: this machine's recommendation with torchaudio" in result.stderr
    detected = runner.invoke(app, ["detect", "--format", "json", "--with", "torchaudio", "--build"])
    package = json.loads(detected.stdout)["recommendation"]["package"]
    assert (tmp_path / "out" / f"{package}.nix").exists()


def test_ctrl_c_while_the_program_still_loads_is_one_line_and_130() -> None:
    """The interrupt arrives as the command line's module loads (an import hook raises it there): deterministic,
    however fast the machine."""
    program = textwrap.dedent(
        """
        import sys
        class Interrupt:
            def find_spec(self, name, path=None, target=None):
                if name == "pickvariant.cli.options":
                    raise KeyboardInterrupt
        sys.meta_path.insert(0, Interrupt())
        from pickvariant.cli.entry import console_main
        raise SystemExit(console_main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program, "detect", "--format", "json", "--no-gpu"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 130 and done.stderr == "pickvariant: interrupted\n", done.stderr
