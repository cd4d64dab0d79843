"""`pickvariant install` against tests/flox_standin.py: a `flox` that follows the contract read from
flox/flox's source (pickvariant/sources/flox/install/flox_contract.json), refusing what the real one refuses."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import tomllib
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest
from conftest import REPO, cli_runner, cpuinfo_path, require, torch_site_packages

from pickvariant._base.errors import OperationFailed
from pickvariant._base.proc import Command, run
from pickvariant.cli.main import app
from pickvariant.sources.flox.install import floxcontract

runner = cli_runner()
HASWELL = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--gpu", "8.6", "--driver", "580.95.05"]
CPU_ONLY = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--no-gpu"]
PACKAGE = "pytorch-python313-cuda13_1-sm86-avx2"
CPU_PACKAGE = "pytorch-python313-cpu-avx2"


def planned(stdout: str) -> list[list[str]]:
    """The commands `install` printed as its plan, as argument lists."""
    return [shlex.split(line.split("run: ", 1)[1]) for line in stdout.splitlines() if line.strip().startswith("run: ")]


def flox_argvs(commands: list[list[str]]) -> list[list[str]]:
    return [argv[1:] for argv in commands if argv[0] == "flox"]


def manifest(directory: Path) -> dict:
    return tomllib.loads((directory / ".flox/env/manifest.toml").read_text())


def test_published_path_checks_the_login_then_inits_and_installs_the_chosen_version(tmp_path, fake_flox) -> None:
    target = tmp_path / "project"
    target.mkdir()
    args = ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--no-verify"]
    dry = runner.invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0 and fake_flox() == []
    result = runner.invoke(app, [*args, "--yes"])
    assert result.exit_code == 0, result.output
    recorded = [call["argv"] for call in fake_flox()]
    # --dry-run printed exactly what a real run ran, in order.
    assert flox_argvs(planned(dry.stdout)) == recorded
    assert recorded == [
        ["auth", "status"],
        ["init", "-d", str(target), "--no-auto-setup"],
        ["install", "-d", str(target), f"acme/{PACKAGE}@2.10.0", "python313"],
    ]
    installed = manifest(target)["install"]
    assert installed[PACKAGE] == {"pkg-path": f"acme/{PACKAGE}", "version": "2.10.0", "systems": ["x86_64-linux"]}
    assert installed["python313"] == {"pkg-path": "python313"}
    assert json.loads((target / ".flox/env.json").read_text()) == {"name": "project", "version": 1}
    assert f"flox activate -d {target} -- python3" in result.stdout


def test_the_version_the_decision_chose_is_installed_not_the_newest_of_that_name(tmp_path, fake_flox) -> None:
    # pytorch-python313-cpu-avx2 is built on several branches, 2.9-python313 (2.9.1) and 2.10-python313 (2.10.0) among them.
    target = tmp_path / "project"
    result = runner.invoke(
        app, ["install", *CPU_ONLY, "--torch", "2.9", "--org", "acme", "--dir", str(target), "--yes", "--no-verify"]
    )
    assert result.exit_code == 0, result.output
    assert manifest(target)["install"][CPU_PACKAGE]["version"] == "2.9.1"
    entry = fake_flox.catalog()[f"acme/{CPU_PACKAGE}"]
    assert {"2.10.0", "2.9.1"} <= set(entry["versions"])


def test_a_missing_dir_is_created_by_flox_init_and_removed_again_when_the_install_fails(tmp_path, fake_flox) -> None:
    target = tmp_path / "new" / "project"
    catalog = fake_flox.catalog()
    catalog[f"acme/{PACKAGE}"]["versions"] = ["2.9.1"]  # the org never published the 2.10 build
    fake_flox.write_catalog(catalog)
    failed = runner.invoke(app, ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"])
    assert failed.exit_code == 1
    assert "constraints for group 'toplevel' are too tight" in failed.stderr
    assert "not the PyTorch version the decision chose" in failed.stderr
    assert not target.exists() and (tmp_path / "new").exists()
    catalog[f"acme/{PACKAGE}"]["versions"] = ["2.10.0"]
    fake_flox.write_catalog(catalog)
    done = runner.invoke(app, ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"])
    assert done.exit_code == 0, done.output
    assert (target / ".flox/env.json").is_file()


def test_an_existing_environment_is_kept_and_left_as_it_was_when_an_install_fails(tmp_path, fake_flox) -> None:
    target = tmp_path / "project"
    target.mkdir()
    assert subprocess.run(["flox", "init", "-d", str(target)], capture_output=True).returncode == 0
    mine = (target / ".flox/env/manifest.toml").read_text() + "# my own comment\n"
    (target / ".flox/env/manifest.toml").write_text(mine)
    fake_flox.write_catalog({k: v for k, v in fake_flox.catalog().items() if k != f"acme/{PACKAGE}"})
    failed = runner.invoke(app, ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"])
    assert failed.exit_code == 1 and f"Could not find package 'acme/{PACKAGE}'" in failed.stderr
    assert (target / ".flox/env/manifest.toml").read_text() == mine and (target / ".flox/env.json").is_file()
    assert [call["argv"][0] for call in fake_flox()][1:] == ["auth", "install"]  # no second init


def test_a_logged_out_user_is_told_how_to_log_in_before_anything_runs(tmp_path, fake_flox, monkeypatch) -> None:
    fake_flox.logout()
    target = tmp_path / "project"
    result = runner.invoke(app, ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"])
    assert result.exit_code == 1
    assert "You are not currently logged in to FloxHub" in result.stderr and "flox auth login" in result.stderr
    assert [call["argv"] for call in fake_flox()] == [["auth", "status"]] and not target.exists()
    # CI: a service account's token in FLOX_FLOXHUB_TOKEN is a login.
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", "flox_sat_ci")
    catalog = fake_flox.catalog()
    catalog[f"acme/{PACKAGE}"]["members"].append("ci")
    fake_flox.write_catalog(catalog)
    assert (
        runner.invoke(
            app, ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"]
        ).exit_code
        == 0
    )
    # A revoked token is not.
    (fake_flox.state / "revoked.json").write_text(json.dumps(["flox_sat_ci"]))
    again = runner.invoke(
        app, ["install", *HASWELL, "--org", "acme", "--dir", str(tmp_path / "other"), "--yes", "--no-verify"]
    )
    assert again.exit_code == 1 and "expired or has been revoked" in again.stderr


def test_a_failed_login_check_gets_the_login_remedy_whatever_flox_says(tmp_path, fake_flox, monkeypatch) -> None:
    fake_flox.logout()
    monkeypatch.setenv("FAKE_FLOX_REWORDED", "1")
    result = runner.invoke(
        app, ["install", *HASWELL, "--org", "acme", "--dir", str(tmp_path / "p"), "--yes", "--no-verify"]
    )
    assert result.exit_code == 1 and "no FloxHub session" in result.stderr
    assert "what to do: log in to FloxHub (`flox auth login`" in result.stderr


def test_a_member_of_another_org_does_not_see_the_package(tmp_path, fake_flox) -> None:
    fake_flox.login("outsider")
    result = runner.invoke(
        app, ["install", *HASWELL, "--org", "acme", "--dir", str(tmp_path / "p"), "--yes", "--no-verify"]
    )
    assert result.exit_code == 1 and f"Could not find package 'acme/{PACKAGE}'" in result.stderr
    assert "this account cannot see it" in result.stderr


def test_a_dot_flox_without_an_environment_is_refused_before_anything_runs(tmp_path, fake_flox) -> None:
    build = tmp_path / "build"
    written = runner.invoke(app, ["recipe", PACKAGE, "--generate", "-o", str(build / ".flox/pkgs")])
    assert written.exit_code == 0
    result = runner.invoke(app, ["install", *HASWELL, "--build-dir", str(build), "--generate", "--yes", "--no-verify"])
    assert result.exit_code == 2 and "no .flox/env.json" in result.stderr and fake_flox() == []
    # What the real flox says to the same directory:
    init = subprocess.run(["flox", "init", "-d", str(build)], capture_output=True, text=True)
    assert init.returncode == 1 and "unable to locate an 'env.json'" in init.stderr


def test_build_path_tracks_the_recipe_builds_and_installs_the_result_with_a_python(tmp_path, fake_flox) -> None:
    build, target = tmp_path / "build", tmp_path / "project"
    args = ["install", *HASWELL, "--build-dir", str(build), "--dir", str(target), "--generate", "--no-verify"]
    dry = runner.invoke(app, [*args, "--dry-run"])
    result = runner.invoke(app, [*args, "--yes"])
    assert result.exit_code == 0, result.output
    recorded = [call["argv"] for call in fake_flox()]
    assert flox_argvs(planned(dry.stdout)) == recorded
    result_link = build / f"result-{PACKAGE}"
    assert recorded == [
        ["auth", "status"],
        ["init", "-d", str(build), "--no-auto-setup"],
        ["build", "-d", str(build), PACKAGE],
        ["init", "-d", str(target), "--no-auto-setup"],
        ["install", "-d", str(target), str(result_link), "python313"],
    ]
    tracked = subprocess.run(["git", "ls-files"], cwd=build, capture_output=True, text=True).stdout.split()
    assert f".flox/pkgs/{PACKAGE}.nix" in tracked
    # A PyTorch build result holds site-packages and no interpreter: the environment brings python3.
    assert [p.name for p in result_link.resolve().iterdir()] == ["lib"] and not (result_link / "bin").exists()
    installed = manifest(target)["install"]
    (store_entry,) = [spec for key, spec in installed.items() if "store-path" in spec]
    assert store_entry["store-path"] == str(result_link.resolve())
    assert "hours" in result.stdout and "flox publish refuses this build directory" in result.stdout
    record = json.loads((tmp_path / "cache/pickvariant/last-install.json").read_text())
    assert record["python"] == ["flox", "activate", "-d", str(target), "--", "python3"] and record["build_dir"] == str(
        build
    )


def test_build_failures_name_flox_s_reason_and_leave_no_environment_behind(tmp_path, fake_flox, monkeypatch) -> None:
    build, target = tmp_path / "build", tmp_path / "project"
    args = ["install", *HASWELL, "--build-dir", str(build), "--dir", str(target), "--generate", "--yes", "--no-verify"]
    monkeypatch.setenv("FAKE_FLOX_OFFLINE", "1")
    monkeypatch.setenv("FLOX_FLOXHUB_TOKEN", "")
    offline = runner.invoke(app, args)
    assert offline.exit_code == 1 and "could not reach FloxHub" in offline.stderr
    monkeypatch.delenv("FAKE_FLOX_OFFLINE")
    monkeypatch.setenv("FAKE_FLOX_BUILD_FAILS", "1")
    failed = runner.invoke(app, args)
    assert failed.exit_code == 1 and "✘ ERROR: Build failed" in failed.stderr
    assert not target.exists() and not (build / f"result-{PACKAGE}").exists()


def test_flox_build_refuses_an_untracked_recipe_and_an_offline_base_catalog(tmp_path, fake_flox, monkeypatch) -> None:
    """What pickvariant's `git add` and network advice are for, shown on the stand-in itself."""
    build = tmp_path / "build"
    subprocess.run(["git", "init", "-q", str(build)], check=True)
    assert subprocess.run(["flox", "init", "-d", str(build)], capture_output=True).returncode == 0
    assert runner.invoke(app, ["recipe", PACKAGE, "--generate", "-o", str(build / ".flox/pkgs")]).exit_code == 0
    untracked = subprocess.run(["flox", "build", "-d", str(build), PACKAGE], capture_output=True, text=True)
    assert untracked.returncode == 1 and "does not appear to be tracked by git" in untracked.stderr
    subprocess.run(["git", "add", "."], cwd=build, check=True)
    monkeypatch.setenv("FAKE_FLOX_OFFLINE", "1")
    offline = subprocess.run(["flox", "build", "-d", str(build), PACKAGE], capture_output=True, text=True)
    assert offline.returncode == 1 and floxcontract.message_head("base_catalog_unreachable") in offline.stderr
    assert "needs the network" in floxcontract.remedy(offline.stderr)
    monkeypatch.delenv("FAKE_FLOX_OFFLINE")
    built = subprocess.run(["flox", "build", "-d", str(build), PACKAGE], capture_output=True, text=True, cwd=build)
    assert built.returncode == 0 and f"Built output: ./result-{PACKAGE}" in built.stderr
    subcommand = subprocess.run(["flox", "build", "-d", str(build), "update-catalogs"], capture_output=True, text=True)
    assert subcommand.returncode == 1 and "no longer supported" in subcommand.stderr


@pytest.mark.slow
def test_the_installed_torch_is_probed_through_the_environment(tmp_path, fake_flox) -> None:
    require(torch_site_packages() is not None, "torch is not installed (pip install torch==2.13.0): the probe needs it")
    build, target = tmp_path / "build", tmp_path / "project"
    result = runner.invoke(
        app, ["install", *CPU_ONLY, "--build-dir", str(build), "--dir", str(target), "--generate", "--yes"]
    )
    # The probe ran in the environment's python3, which finds torch only through Flox's PYTHONPATH;
    # this torch is the test machine's, so it is not the variant's 2.10.0, and verify says exactly that.
    assert (
        f"this torch is not {CPU_PACKAGE}: torch {installed_version('torch')}, the variant ships 2.10.0"
        in result.stdout
    ), result.output
    assert result.exit_code == 1
    activate = ["flox", "activate", "-d", str(target), "--", "python3"]
    assert [call["argv"][:5] for call in fake_flox()][-1] == activate[1:]
    # The same python3 without the environment has no torch (it runs with -S).
    bare = subprocess.run(
        [fake_flox.catalog()["python313"]["interpreter"], "-S", "-c", "import torch"], capture_output=True
    )
    assert bare.returncode != 0
    # `pickvariant verify` afterwards probes the same environment.
    again = runner.invoke(app, ["verify", "--quick", "--format", "json"])
    assert json.loads(again.stdout)["probe"]["torch"] == installed_version("torch")


@pytest.mark.slow
def test_verify_package_probes_a_published_variant_in_a_throwaway_environment(tmp_path, fake_flox) -> None:
    require(torch_site_packages() is not None, "torch is not installed (pip install torch==2.13.0): the probe needs it")
    result = runner.invoke(
        app, ["verify", "--package", CPU_PACKAGE, "--branch", "pytorch-2.10-python313", "--org", "acme", "--quick"]
    )
    assert "flox run cannot probe it" in result.stdout and "takes no @VERSION" in result.stdout
    assert f"torch {installed_version('torch')}, the variant ships 2.10.0" in result.stdout
    commands = [call["argv"] for call in fake_flox()]
    assert commands[:2] == [["--version"], ["auth", "status"]] and commands[3][3:] == [
        f"acme/{CPU_PACKAGE}@2.10.0",
        "python313",
    ]
    assert commands[-1][0] == "activate"
    throwaway = Path(commands[2][2])
    assert not throwaway.exists()  # removed after the probe
    assert not [call for call in commands if call[0] == "run"]


def test_flox_run_is_used_only_where_the_contract_says_it_can_start_the_probe() -> None:
    assert not floxcontract.run_can_probe(None).usable
    newest = floxcontract.run_can_probe(floxcontract.parse_flox_version("1.14.1"))
    assert not newest.usable and len(newest.why_not) == 2
    assert (
        floxcontract.run_can_probe(floxcontract.parse_flox_version("1.13.0"))
        .why_not[0]
        .startswith("flox run needs Flox 1.13.1")
    )


def test_the_stand_in_refuses_what_flox_refuses(tmp_path, fake_flox) -> None:
    def flox(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["flox", *args], capture_output=True, text=True)

    env = tmp_path / "env"
    assert flox("init", "-d", str(env)).returncode == 0
    for argv, says in (
        (("init", "-d", str(env)), "Found an existing environment"),
        (("install", "-d", str(tmp_path / "none"), "python313"), "Did not find an environment"),
        (("install", "-d", str(env), str(tmp_path)), "store path must be in the '/nix/store' directory"),
        (("install", "-d", str(env), "--frobnicate", "python313"), "is not expected in this context"),
        (("run", "-p", f"acme/{CPU_PACKAGE}@2.10.0", "--", "python3"), "version constraints ('@')"),
        (("run", "-p", f"acme/{CPU_PACKAGE}", "--", "python3"), "Command 'python3' was not found in package"),
    ):
        done = flox(*argv)
        assert done.returncode == 1 and done.stderr.startswith("✘ ERROR: ") and says in done.stderr, (argv, done.stderr)
    assert flox("--version").stdout.strip() == "1.14.1"


def test_long_output_goes_to_the_log(tmp_path, fake_flox, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_FLOX_MODE", "long")
    log = tmp_path / "flox.log"
    lines: list[str] = []
    run(Command(("flox", "auth", "status"), tmp_path, "login"), log, lines.append)
    assert "log line 499" in log.read_text() and len(lines) == 501


def test_a_timeout_stops_flox_and_says_so(tmp_path, fake_flox, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_FLOX_MODE", "sleep:30")
    with pytest.raises(OperationFailed, match=r"timed out after 0\.5 s"):
        run(Command(("flox", "auth", "status"), tmp_path, "login"), tmp_path / "l.log", timeout_s=0.5)


def test_a_package_that_does_not_fit_is_refused_unless_forced(tmp_path, fake_flox) -> None:
    args = [
        "install",
        *HASWELL,
        "--package",
        "pytorch-python313-cuda13_1-sm90-avx512",
        "--build-dir",
        str(tmp_path / "b"),
        "--generate",
        "--dry-run",
    ]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2
    assert "avx512f" in refused.stderr and "8.6" in refused.stderr
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0


def test_an_existing_different_recipe_is_not_overwritten(tmp_path, fake_flox) -> None:
    build = tmp_path / "build"
    subprocess.run(["git", "init", "-q", str(build)], check=True)
    assert subprocess.run(["flox", "init", "-d", str(build)], capture_output=True).returncode == 0
    mine = build / f".flox/pkgs/{PACKAGE}.nix"
    mine.parent.mkdir(parents=True)
    mine.write_text("# my tuned recipe\n")
    result = runner.invoke(app, ["install", *HASWELL, "--build-dir", str(build), "--generate", "--yes", "--no-verify"])
    assert result.exit_code == 2 and str(mine) in result.stderr
    assert mine.read_text() == "# my tuned recipe\n"
    assert not [c for c in fake_flox() if c["argv"][0] == "build"]


def test_an_environment_holding_another_version_under_the_same_id_is_refused(tmp_path, fake_flox) -> None:
    target = tmp_path / "project"
    older = runner.invoke(
        app, ["install", *CPU_ONLY, "--torch", "2.9", "--org", "acme", "--dir", str(target), "--yes", "--no-verify"]
    )
    assert older.exit_code == 0, older.output
    newer = runner.invoke(app, ["install", *CPU_ONLY, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"])
    assert (
        newer.exit_code == 2
        and "version '2.9.1'" in newer.stderr
        and f"flox uninstall -d {target} {CPU_PACKAGE}" in newer.stderr
    )
    assert manifest(target)["install"][CPU_PACKAGE]["version"] == "2.9.1"


def test_install_for_another_cpu_architecture_is_refused_before_anything_runs(tmp_path, fake_flox) -> None:
    """A what-if dump of another architecture (or a Mac's sysctl) describes another machine: install would put a build here that cannot run here."""
    from pickvariant.machine.cpu import host_platform

    here = host_platform()
    other = next(
        dump
        for dump, platform in (
            ("linux-rhel9-neoverse_v2", ("linux", "aarch64")),
            ("linux-rhel7-haswell", ("linux", "x86_64")),
            ("darwin-sequoia-m4", ("darwin", "aarch64")),
        )
        if platform != here
    )
    result = runner.invoke(
        app,
        [
            "install",
            "--cpuinfo",
            str(REPO / "tests/fixtures/cpuinfo" / other),
            "--gpu",
            "9.0",
            "--driver",
            "580.95.05",
            "--org",
            "acme",
            "--dir",
            str(tmp_path / "p"),
            "--dry-run",
        ],
    )
    assert result.exit_code == 2 and "`pickvariant detect` and `recipe` serve other machines" in result.stderr
    assert fake_flox() == []


H100 = ["--cpuinfo", str(cpuinfo_path("linux-unknown-sapphirerapids")), "--gpu", "9.0", "--driver", "580.95.05"]
VISION = "torchvision-python313-cuda13_1-sm90-avx512"
TORCH_210 = "pytorch-python313-cuda13_1-sm90-avx512"


def publish_companions(fake_flox, extra: dict[str, dict]) -> None:
    entries = fake_flox.catalog()
    entries.update(extra)
    fake_flox.write_catalog(entries)


def separate_vision(fake_flox, site_packages: str | None = None, torch: str = "2.10.0") -> dict[str, dict]:
    """acme's torchvision as build-torchvision builds it: its own torch (2.10.0), propagated."""
    return {
        "acme/torch-for-torchvision": {
            "kind": "site-packages",
            "versions": [torch],
            "members": ["tester"],
            "site_packages": site_packages or fake_flox.torch_distribution(torch),
        },
        f"acme/{VISION}": {
            "kind": "companion",
            "module": "torchvision",
            "versions": ["0.25.0"],
            "members": ["tester"],
            "propagates": [f"acme/torch-for-torchvision@{torch}"],
        },
    }


def test_install_with_a_separately_built_companion_installs_it_alone_and_its_torch_is_the_one_linked(
    tmp_path, fake_flox
) -> None:
    publish_companions(fake_flox, separate_vision(fake_flox))
    target = tmp_path / "env"
    result = runner.invoke(
        app, ["install", *H100, "--with", "torchvision", "--org", "acme", "--dir", str(target), "--yes", "--no-verify"]
    )
    assert result.exit_code == 0, result.output
    installed = manifest(target)["install"]
    assert set(installed) == {VISION, "python313"}  # the variant itself is not installed beside it
    record = json.loads((tmp_path / "cache/pickvariant/last-install.json").read_text())
    assert record["companions"] == [{"project": "torchvision", "package": VISION}]  # a later `verify` checks it too
    assert "installed alone" in result.stdout and "two PyTorch builds in one process" in result.stdout
    run_dir = next((target / ".flox" / "run").iterdir())
    winners = json.loads((run_dir / "stand-in-links.json").read_text())
    (torch_init,) = [path for path in winners if path.endswith("/site-packages/torch/__init__.py")]
    assert winners[torch_init].endswith("-torch-for-torchvision-2.10.0")  # the torch torchvision was built against


def test_two_explicit_torches_fail_as_flox_fails_and_the_variant_beside_a_separate_companion_wins_silently(
    tmp_path, fake_flox
) -> None:
    """What pickvariant's plans avoid: Flox refuses two installed torches at one priority, and links an installed torch over
    the one a companion propagates without a word (dev mode), leaving the companion's extension with a torch it was not built with."""
    require(fake_flox.site_packages is not None, "torch is not installed (pip install torch==2.13.0)")
    publish_companions(fake_flox, separate_vision(fake_flox, fake_flox.site_packages))
    naive = tmp_path / "naive"
    subprocess.run(["flox", "init", "-d", str(naive)], check=True, capture_output=True)
    both = subprocess.run(
        ["flox", "install", "-d", str(naive), f"acme/{TORCH_210}@2.10.0", "acme/torch-for-torchvision@2.10.0"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert both.returncode == 1
    # Which file builder.pl names first depends on what else the interpreter's site-packages holds (both trees
    # link all of it here): the refusal and its form are what is checked.
    assert re.search(
        f"ERROR: Failed to construct environment: '{TORCH_210}' conflicts with 'torch-for-torchvision'. "
        "Both packages provide the file '[^'/]+'",
        both.stderr,
    ), both.stderr
    assert "setting the priority of the preferred package to a value lower than '5'" in both.stderr
    assert "install" not in manifest(naive) or not manifest(naive)["install"]  # transactional: nothing was added
    beside = subprocess.run(
        ["flox", "install", "-d", str(naive), f"acme/{TORCH_210}@2.10.0", f"acme/{VISION}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert beside.returncode == 0, beside.stderr
    store = fake_flox.state / "store"
    (explicit,) = [path for path in store.iterdir() if path.name.endswith(f"-{TORCH_210}-2.10.0")]
    run_dir = next((naive / ".flox" / "run").iterdir())
    winners = json.loads((run_dir / "stand-in-links.json").read_text())
    # The environment's torch is the installed one's store tree, not the one torchvision was built against.
    (torch_init,) = [path for path in winners if path.endswith("/site-packages/torch/__init__.py")]
    assert winners[torch_init] == explicit.name and winners[
        torch_init.replace("torch/__init__.py", "torchvision/__init__.py")
    ].endswith(VISION + "-0.25.0")


def test_install_with_an_in_repo_companion_installs_both_and_links_one_torch(tmp_path, fake_flox) -> None:
    pascal = [
        "--cpuinfo",
        str(cpuinfo_path("linux-rhel7-ivybridge")),
        "--gpu",
        "6.1",
        "--driver",
        "580.95.05",
        "--torch",
        "2.8",
    ]
    vision, variant = "torchvision-python313-cuda12_8-sm61-avx", "pytorch-python313-cuda12_8-sm61-avx"
    published = fake_flox.catalog()[f"acme/{variant}"]
    publish_companions(
        fake_flox,
        {
            f"acme/{variant}": {**published, "site_packages": fake_flox.torch_distribution("2.8.0")},
            f"acme/{vision}": {
                "kind": "companion",
                "module": "torchvision",
                "versions": ["0.23.0"],
                "members": ["tester"],
                "propagates": [f"acme/{variant}@2.8.0"],
            },
        },
    )
    target = tmp_path / "env"
    result = runner.invoke(
        app,
        ["install", *pascal, "--with", "torchvision", "--org", "acme", "--dir", str(target), "--yes", "--no-verify"],
    )
    assert result.exit_code == 0, result.output
    assert set(manifest(target)["install"]) == {variant, vision, "python313"}
    assert "one torch derivation, which Flox links once" in result.stdout
    winners = json.loads((next((target / ".flox" / "run").iterdir()) / "stand-in-links.json").read_text())
    (torch_init,) = [path for path in winners if path.endswith("/site-packages/torch/__init__.py")]
    assert winners[torch_init].endswith(f"-{variant}-2.8.0")  # torchvision propagates that very store path: linked once


def test_install_with_refuses_what_no_environment_can_hold_and_what_it_cannot_build(tmp_path, fake_flox) -> None:
    # torchvision and vLLM each bring a torch of their own build: no environment holds both with one PyTorch, so the
    # set is built from source, which an install from an organisation does not do unasked.
    both = runner.invoke(
        app,
        ["install", *H100, "--with", "torchvision,vllm", "--org", "acme", "--dir", str(tmp_path / "e"), "--dry-run"],
    )
    assert both.exit_code == 2 and "nothing published makes it on one PyTorch here" in both.stderr
    assert both.stderr.endswith("install it with --build\n")
    package = runner.invoke(
        app, ["install", *H100, "--with", "torchvision", "--package", TORCH_210, "--org", "acme", "--dry-run"]
    )
    assert package.exit_code == 2 and "cannot be combined with --package" in package.stderr
    assert fake_flox() == []


@pytest.mark.parametrize("existing", [False, True])
def test_a_companion_that_resolves_to_another_torch_fails_the_install_and_the_environment_is_put_back(
    tmp_path, fake_flox, existing
) -> None:
    """torchvision is installed by name (no version of it is known), and acme's newest torchvision of that name was
    built on PyTorch 2.9.1 while the set is on 2.10.0: with --no-verify too, the install reads the environment's torch
    before it says Done, fails, and leaves the environment as it was (or none, where it made it)."""
    publish_companions(fake_flox, separate_vision(fake_flox, torch="2.9.1"))
    target = tmp_path / "env"
    before = None
    if existing:
        subprocess.run(["flox", "init", "-d", str(target)], check=True, capture_output=True)
        before = [(target / ".flox/env" / name).read_bytes() for name in ("manifest.toml", "manifest.lock")]
    result = runner.invoke(
        app, ["install", *H100, "--with", "torchvision", "--org", "acme", "--dir", str(target), "--yes", "--no-verify"]
    )
    assert result.exit_code == 1, result.output
    assert "the environment's Python finds torch 2.9.1, not PyTorch 2.10.0" in result.stderr
    assert f"Flox resolved {VISION} (installed by name" in result.stderr and "Done" not in result.stdout
    if existing:
        after = [(target / ".flox/env" / name).read_bytes() for name in ("manifest.toml", "manifest.lock")]
        assert after == before
    else:
        assert not (target / ".flox").exists()
    assert not (tmp_path / "cache/pickvariant/last-install.json").exists()


def test_a_set_that_would_add_a_second_torch_to_an_environment_is_refused_naming_what_is_there(
    tmp_path, fake_flox
) -> None:
    """install --torch 2.9 (the CPU build), then install --with torchvision into the same --dir: the companion brings
    a torch of its own, so it would be a second PyTorch beside the first. Refused before anything runs, naming it."""
    require(fake_flox.site_packages is not None, "torch is not installed (pip install torch==2.13.0)")
    publish_companions(fake_flox, separate_vision(fake_flox))
    target = tmp_path / "env"
    first = runner.invoke(app, ["install", *H100, "--org", "acme", "--dir", str(target), "--yes", "--no-verify"])
    assert first.exit_code == 0, first.output
    before = (target / ".flox/env/manifest.toml").read_bytes()
    calls = len(fake_flox())
    second = runner.invoke(
        app, ["install", *H100, "--with", "torchvision", "--org", "acme", "--dir", str(target), "--dry-run"]
    )
    assert second.exit_code == 2
    assert second.stderr == (
        f"pickvariant: {target} already holds {TORCH_210} ({TORCH_210}), which brings a PyTorch build; adding {VISION} "
        "would put a second one in the same environment: install into another --dir, or remove it first "
        f"(flox uninstall -d {target} {TORCH_210})\n"
    )
    assert (target / ".flox/env/manifest.toml").read_bytes() == before and len(fake_flox()) == calls
    # The same variant again is no second torch: the install is repeated, not refused.
    again = runner.invoke(app, ["install", *H100, "--org", "acme", "--dir", str(target), "--dry-run"])
    assert again.exit_code == 0, again.output


def test_a_manifest_that_is_no_regular_file_is_refused_not_waited_on(tmp_path, fake_flox) -> None:
    target = tmp_path / "env"
    (target / ".flox" / "env").mkdir(parents=True)
    (target / ".flox" / "env.json").write_text('{"name": "env", "version": 1}')
    os.mkfifo(target / ".flox" / "env" / "manifest.toml")
    result = runner.invoke(app, ["install", *CPU_ONLY, "--org", "acme", "--dir", str(target), "--dry-run"])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"pickvariant: cannot read the Flox manifest {target}/.flox/env/manifest.toml: it is not a regular file"
    )


def test_install_with_build_builds_one_torch_and_each_companion_on_it_and_installs_them_together(
    tmp_path, fake_flox
) -> None:
    """--with torchaudio --build: one build directory holds the variant's recipe and torchaudio's, generated on it;
    one `flox build` of both; the environment links one torch, the variant's, which torchaudio propagates."""
    build, target = tmp_path / "build", tmp_path / "env"
    args = ["install", *H100, "--with", "torchaudio", "--build", "--generate", "--build-dir", str(build)]
    args += ["--dir", str(target), "--no-verify"]
    dry = runner.invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    result = runner.invoke(app, [*args, "--yes"])
    assert result.exit_code == 0, result.output
    audio = "torchaudio" + TORCH_210.removeprefix("pytorch")
    recorded = [call["argv"] for call in fake_flox()]
    assert flox_argvs(planned(dry.stdout)) == recorded
    assert recorded[2:] == [
        ["build", "-d", str(build), TORCH_210, audio],  # one torch build and one per companion
        ["init", "-d", str(target), "--no-auto-setup"],
        ["install", "-d", str(target), str(build / f"result-{TORCH_210}"), str(build / f"result-{audio}"), "python313"],
    ]
    tracked = subprocess.run(["git", "ls-files"], cwd=build, capture_output=True, text=True).stdout.split()
    assert {f".flox/pkgs/{TORCH_210}.nix", f".flox/pkgs/{audio}.nix"} <= set(tracked)
    assert f"import ./{TORCH_210}.nix;" in (build / ".flox" / "pkgs" / f"{audio}.nix").read_text()
    winners = json.loads((next((target / ".flox" / "run").iterdir()) / "stand-in-links.json").read_text())
    linked_torch = {winners[path] for path in winners if path.endswith("/site-packages/torch/__init__.py")}
    assert linked_torch == {(build / f"result-{TORCH_210}").resolve().name}  # one torch: the variant's
    propagated = (build / f"result-{audio}").resolve() / "nix-support" / "propagated-build-inputs"
    assert propagated.read_text().split() == [str((build / f"result-{TORCH_210}").resolve())]
    assert f"Done: {TORCH_210}, {audio}" in result.stdout
    record = json.loads((tmp_path / "cache/pickvariant/last-install.json").read_text())
    assert record["companions"] == [{"project": "torchaudio", "package": audio}]


def test_a_set_built_from_source_is_not_installed_from_an_organisation_without_build(tmp_path, fake_flox) -> None:
    """Nothing published makes a torchaudio set on one PyTorch: with --org alone, install says it must be built."""
    result = runner.invoke(
        app, ["install", *H100, "--with", "torchaudio", "--org", "acme", "--dir", str(tmp_path / "e"), "--dry-run"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith(f"pickvariant: the set {TORCH_210}, torchaudio") and "with --build" in result.stderr
    assert fake_flox() == []


def test_a_token_file_logs_in_without_a_prompt_and_the_token_is_never_shown(tmp_path, fake_flox) -> None:
    """--token-file PATH: the first step is `flox auth login --token-file PATH` (Flox 1.14.0+, no browser, no prompt),
    then the install as usual; the token itself is in no output, log or record."""
    fake_flox.logout()
    token = tmp_path / "floxhub-token"
    token.write_text("flox_pat_tester\n")
    target = tmp_path / "env"
    args = ["install", *HASWELL, "--org", "acme", "--dir", str(target), "--no-verify", "--token-file", str(token)]
    result = runner.invoke(app, [*args, "--yes"])
    assert result.exit_code == 0, result.output
    recorded = [call["argv"] for call in fake_flox()]
    assert recorded[0] == ["auth", "login", "--token-file", str(token)] and recorded[-1][0] == "install"
    written = [result.stdout, result.stderr]
    written += [path.read_text() for path in (tmp_path / "cache" / "pickvariant").rglob("*") if path.is_file()]
    assert not any("flox_pat_tester" in text for text in written)
    # A revoked token: Flox's refusal, and what to do about it.
    (fake_flox.state / "revoked.json").write_text(json.dumps(["flox_pat_tester"]))
    fake_flox.logout()
    again = runner.invoke(
        app, [*args[:-5], "--dir", str(tmp_path / "other"), "--no-verify", "--token-file", str(token), "--yes"]
    )
    assert again.exit_code == 1 and "The provided token is expired." in again.stderr
    assert "write a fresh one" in again.stderr and not (tmp_path / "other" / ".flox").exists()


@pytest.mark.parametrize("kind", ["missing", "fifo", "stdin"])
def test_a_token_file_that_is_no_file_is_refused_before_anything_runs(tmp_path, fake_flox, kind) -> None:
    path = tmp_path / "token"
    if kind == "fifo":
        os.mkfifo(path)  # flox would wait on it forever
    given = "-" if kind == "stdin" else str(path)
    result = runner.invoke(
        app, ["install", *HASWELL, "--org", "acme", "--dir", str(tmp_path / "e"), "--dry-run", "--token-file", given]
    )
    assert result.exit_code == 2 and result.stderr.startswith(f"pickvariant: --token-file {given}: ")
    assert result.stderr.count("\n") == 1 and fake_flox() == []


def test_a_build_directory_not_written_out_for_this_system_is_refused_as_flox_build_would(tmp_path, fake_flox) -> None:
    """A build environment whose options.systems lack this machine's: flox build refuses it (buildenv.rs
    LockfileIncompatible), so install says so, and how to mend it, before anything runs."""
    build = tmp_path / "build"
    subprocess.run(["flox", "init", "-d", str(build)], check=True, capture_output=True)
    manifest_file = build / ".flox" / "env" / "manifest.toml"
    text = manifest_file.read_text()
    other = "aarch64-darwin"
    manifest_file.write_text(re.sub(r"systems = \[[^\]]*\]", f'systems = ["{other}"]', text))
    direct = subprocess.run(["flox", "build", "-d", str(build)], capture_output=True, text=True, check=False)
    assert direct.returncode == 1 and "Lockfile is not compatible with the current system" in direct.stderr
    calls = len(fake_flox())
    result = runner.invoke(
        app, ["install", *HASWELL, "--generate", "--build-dir", str(build), "--dir", str(tmp_path / "e"), "--dry-run"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith(f"pickvariant: --build-dir {build}: its Flox environment is for {other}, not ")
    assert "options.systems" in result.stderr and len(fake_flox()) == calls


@pytest.mark.parametrize("project", ["torchaudio", "torchvision", "vllm"])
def test_an_environment_holding_a_companion_refuses_a_second_torch_beside_the_one_it_brings(
    tmp_path, fake_flox, project
) -> None:
    """The environment already holds a torchaudio (torchvision, vLLM) build, whose own torch comes with it: installing
    a PyTorch variant there would be a second torch. Refused, naming what is there; nothing runs."""
    target = tmp_path / "env"
    (target / ".flox" / "env").mkdir(parents=True)
    (target / ".flox" / "env.json").write_text('{"name": "env", "version": 1}')
    there = f"{project}-python313-cuda13_1-sm90-avx512"
    (target / ".flox" / "env" / "manifest.toml").write_text(
        f'version = 1\n\n[install]\n{project}.pkg-path = "acme/{there}"\n'
    )
    result = runner.invoke(app, ["install", *H100, "--org", "acme", "--dir", str(target), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"pickvariant: {target} already holds {project} ({there}), which brings a PyTorch")
    assert fake_flox() == []


@pytest.mark.parametrize(
    ("found", "wrong"),
    [("2.9.0", True), ("2.9.1", False), ("2.9.1+cu129", False), ("2.9", True), ("2.10.0", True), ("", True)],
)
def test_a_linked_torch_of_another_release_is_wrong_to_the_patch(found, wrong) -> None:
    """2.9.1 was chosen: a torch that reads back as 2.9.0 is another build (its ABI), whatever its major and minor."""
    from pickvariant.sources.flox.install.linked_torch import wrong_torch

    assert wrong_torch(found, "2.9.1") is wrong


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("runner", ["run", "capture"])
def test_a_signal_that_lands_as_the_child_starts_stops_the_child(tmp_path, monkeypatch, sig, runner) -> None:
    """A real signal sent to this process the moment the real child has started, before the runner waits on it
    (where pip once ran on unseen while the environment was mended, issue 51): the child is stopped, not left."""
    from pickvariant._base import capture, proc
    from pickvariant._base.errors import Interrupted, Terminated

    started: list[subprocess.Popen] = []
    real_popen = subprocess.Popen

    def popen_then_signalled(*args, **kwargs):
        child = real_popen(*args, **kwargs)
        started.append(child)
        signal.raise_signal(sig)  # as a Ctrl-C landing just as Popen returns
        return child

    monkeypatch.setattr(proc.subprocess, "Popen", popen_then_signalled)
    raised: BaseException | None = None
    try:
        with proc.terminable():
            if runner == "run":
                run(Command(argv=("sleep", "30"), cwd=tmp_path, description="x"), tmp_path / "log")
            else:
                capture.capture(["sleep", "30"], timeout_s=60, max_stdout=1024, what="x")
    except BaseException as error:  # a KeyboardInterrupt that escaped would otherwise end the test run itself
        raised = error
    finally:
        for child in started:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                pytest.fail("the child was left running")
    assert isinstance(raised, Interrupted if sig == signal.SIGINT else Terminated), repr(raised)
    assert started


def test_a_sigterm_that_lands_as_a_noted_ctrl_c_is_acted_on_never_decides_how_it_ends(tmp_path, monkeypatch) -> None:
    """A Ctrl-C lands as the child starts (noted), and a batch system's SIGTERM lands the moment its handler is put
    back, before the Ctrl-C is acted on (CI once saw exit 143 where the Ctrl-C came first): the first signal decides
    (Interrupted, 130) and the child is stopped. The SIGTERM is a real one, sent at that moment."""
    from pickvariant._base import child, proc
    from pickvariant._base.errors import Interrupted

    started: list[subprocess.Popen] = []
    real_popen, real_signal = subprocess.Popen, signal.signal
    armed: list[bool] = []

    def popen_then_interrupted(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        signal.raise_signal(signal.SIGINT)  # noted: the child is in hand only once Popen has returned
        armed.append(True)
        return started[-1]

    def handler_put_back(sig, handler):
        previous = real_signal(sig, handler)
        if armed and sig == signal.SIGTERM and callable(handler) and getattr(handler, "__name__", "") != "_note":
            armed.clear()
            os.kill(os.getpid(), signal.SIGTERM)  # lands as SIGTERM's handler is back
        return previous

    monkeypatch.setattr(proc.subprocess, "Popen", popen_then_interrupted)
    monkeypatch.setattr(child.signal, "signal", handler_put_back)
    raised: BaseException | None = None
    try:
        with proc.terminable():
            run(Command(argv=("sleep", "30"), cwd=tmp_path, description="x"), tmp_path / "log")
    except BaseException as error:  # a KeyboardInterrupt or SigTerm that escaped would end the test run itself
        raised = error
    finally:
        monkeypatch.undo()
        for each in started:
            if each.poll() is None:
                os.killpg(each.pid, signal.SIGKILL)
                each.wait()
                pytest.fail("the child was left running")
    assert isinstance(raised, Interrupted), repr(raised)


def test_a_sigterm_that_lands_while_a_ctrl_c_is_handled_never_decides_how_it_ends() -> None:
    """A Ctrl-C is being handled (its handler is ignoring the signals that follow) when a batch system's SIGTERM
    lands: Python runs SIGTERM's handler inside the Ctrl-C's, before the latter has done (CI saw exit 143 where the
    Ctrl-C came first). The first signal decides: Interrupted (130). The SIGTERM is a real one, sent at that moment."""
    from pickvariant._base import proc
    from pickvariant._base.errors import Interrupted

    real_signal = signal.signal
    armed = [True]

    def ignoring(sig, handler):
        if armed and sig == signal.SIGINT and handler == signal.SIG_IGN:
            armed.clear()
            os.kill(os.getpid(), signal.SIGTERM)  # lands while the Ctrl-C's handler runs, its own still in place
        return real_signal(sig, handler)

    raised: BaseException | None = None
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    signal.signal = ignoring  # type: ignore[assignment]
    try:
        with proc.stoppable("x"):
            signal.raise_signal(signal.SIGINT)
            pytest.fail("the Ctrl-C did not raise")
    except BaseException as error:  # a KeyboardInterrupt or SigTerm that escaped would end the test run itself
        raised = error
    finally:
        signal.signal = real_signal
        for sig, handler in saved.items():
            real_signal(sig, handler)
    assert not armed  # the SIGTERM was sent while the Ctrl-C was handled
    assert isinstance(raised, Interrupted), repr(raised)
