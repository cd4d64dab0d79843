"""torch with its companions, chosen together (issue 28), on the shipped catalog and its companions
(build-pytorch 670c310, build-torchvision c584a75, build-torchaudio 424da7d, build-vllm 1b17389)."""

from __future__ import annotations

import json

import pytest
from conftest import cli_runner, cpuinfo_path
from machines import host

from pickvariant._base.errors import BadInput
from pickvariant._base.request import Request, projects_from
from pickvariant.cli.main import app
from pickvariant.rules import wording
from pickvariant.rules.compat import why_not
from pickvariant.rules.decide import decide
from pickvariant.sources.flox.recipes.stack import load_stack

runner = cli_runner()
H100_HOST = "linux-unknown-sapphirerapids"


def with_(*projects: str) -> Request:
    return Request(with_projects=projects)


def test_the_shipped_companions_say_what_each_torch_is(catalog) -> None:
    stack = load_stack(catalog)
    by_package = {(c.repo.rsplit("/", 1)[-1], c.branch, c.package): c for c in stack.companions}
    vision = by_package[("build-torchvision", "pytorch-2.10", "torchvision-python313-cuda13_1-sm90-avx512")]
    assert (vision.torch, vision.torch_relation, vision.torch_pin[:7]) == ("2.10.0", "separate", "2017d6d")
    audio = by_package[("build-torchaudio", "main", "torchaudio-python313-cuda12_8-sm90-avx2")]
    assert (audio.torch, audio.torch_relation) == (None, "unknown")  # no nixpkgs pin: never guessed from its name
    in_repo = by_package[("build-pytorch", "main", "torchvision-python313-cuda12_8-sm61-avx")]
    assert (in_repo.torch_relation, in_repo.torch_of) == ("identical", "pytorch-python313-cuda12_8-sm61-avx")
    vllm = by_package[("build-vllm", "vllm-0.14.1-python312", "vllm-python312-cuda12_9-sm90-avx512")]
    assert (vllm.torch, vllm.version) == ("2.9.1", "0.14.1")  # vLLM's own `version` is not taken for torch's
    assert {c.cpu_isa for c in stack.of_project("torchaudio")} >= {"armv8_2"}  # spelled armv8.2 there


def test_an_h100_on_a_580_driver_gets_torch_2_10_with_torchvision_on_cuda_13_1(catalog) -> None:
    decision = decide(host(catalog, H100_HOST, gpus=("9.0",), driver="580.95.05"), catalog, with_("torchvision"))
    assert (decision.build.package, decision.build.torch, decision.build.cuda) == (
        "pytorch-python313-cuda13_1-sm90-avx512",
        "2.10.0",
        "13.1",
    )
    (vision,) = decision.companions
    assert (vision.package, vision.branch, vision.torch) == (
        "torchvision-python313-cuda13_1-sm90-avx512",
        "pytorch-2.10",
        "2.10.0",
    )
    assert any("a separate build of torch 2.10.0 from the same nixpkgs pin" in reason for reason in decision.reasons)


def test_on_a_570_driver_the_set_falls_back_to_2_9_1_and_says_what_the_companion_cost(catalog) -> None:
    facts = host(catalog, H100_HOST, gpus=("9.0",), driver="570.124.06")
    alone = decide(facts, catalog)
    decision = decide(facts, catalog, with_("torchvision"))
    assert (alone.build.torch, alone.build.cuda) == ("2.10.0", "12.9")
    assert (decision.build.torch, decision.build.cuda, decision.companions[0].cuda) == ("2.9.1", "12.9", "12.9")
    assert any(reason.startswith(f"PyTorch alone would be {alone.build.label}") for reason in decision.reasons)
    assert (
        "a driver >= 580.65.06 gives PyTorch 2.10.0 with torchvision (pytorch-python313-cuda13_1-sm90-avx512 (pytorch-2.10-python313))"
        in decision.hints
    )
    told = {wording.choice(r): wording.why(r) for r in decision.rejected}
    assert told["branch pytorch-2.10-python313"].startswith("fits for PyTorch alone")


def test_torchaudio_whose_published_torch_is_unknown_is_generated_on_the_newest_torch_for_an_h100(catalog) -> None:
    """build-torchaudio's recipes pin no nixpkgs: none of them is paired, each says what would settle it, and the set
    is the newest PyTorch for the H100 with a torchaudio generated on that variant's own recipe (one torch)."""
    facts = host(catalog, H100_HOST, gpus=("9.0",), driver="580.95.05")
    alone = decide(facts, catalog)
    decision = decide(facts, catalog, with_("torchaudio"))
    assert decision.build == alone.build and decision.build.torch == "2.10.0"
    (audio,) = decision.companions
    assert (audio.torch_relation, audio.torch_of, audio.torch) == ("generated", alone.build.package, "2.10.0")
    assert decision.detail.set_shape.installed == (alone.build.package, audio.package)
    assert decision.detail.set_shape.generated == (audio.package,)
    assert any(reason.startswith("no published torchaudio makes a set") for reason in decision.reasons)
    assert any("20-40 minutes" in reason for reason in decision.reasons)  # what building it costs, with its source
    unknown = [
        r
        for r in decision.rejected
        if wording.choice(r).startswith("torchaudio-") and "unknown torch" in wording.why(r)
    ]
    assert unknown and all("pins nixpkgs" in wording.why(r) for r in unknown)


def test_a_cpu_only_machine_gets_a_cpu_set_or_none(catalog) -> None:
    vision = decide(host(catalog, H100_HOST), catalog, with_("torchvision"))
    assert vision.build.gpu_arch is None and vision.companions[0].gpu_arch is None
    assert (vision.build.torch, vision.build.cpu_isa) == (vision.companions[0].torch, vision.companions[0].cpu_isa)
    assert decide(host(catalog, H100_HOST), catalog, with_("vllm")).build is None  # build-vllm builds no CPU-only vLLM


def test_an_in_repo_derivation_identical_companion_is_preferred_to_a_separate_build(catalog) -> None:
    decision = decide(
        host(catalog, "linux-rhel7-ivybridge", gpus=("6.1",), driver="580.95.05"),
        catalog,
        Request(torch="2.8", with_projects=("torchvision",)),
    )
    (vision,) = decision.companions
    separate = [
        c
        for c in load_stack(catalog).of_project("torchvision")
        if c.package == vision.package and c.torch_relation == "separate"
    ]
    assert separate, "the test needs a separate build of the same package to prefer against"
    assert (vision.torch_relation, vision.torch_of, vision.branch) == (
        "identical",
        decision.build.package,
        decision.build.branch,
    )


def test_vllm_takes_the_branch_aligned_with_its_release(catalog) -> None:
    decision = decide(host(catalog, H100_HOST, gpus=("9.0",), driver="580.95.05"), catalog, with_("vllm"))
    (vllm,) = decision.companions
    assert catalog.branch(decision.build.branch).aligned_with == f"vllm {vllm.version}"
    assert vllm.torch == decision.build.torch == "2.9.1" and vllm.torch_pin == decision.build.nixpkgs_rev


def test_a_set_whose_published_companions_each_bring_their_own_torch_is_built_from_source_by_one_rule(
    catalog, tmp_path
) -> None:
    """torchvision and vLLM on an H100 are each published with a torch of their own: no environment holds them with
    one PyTorch, so the set is built from source, both generated on one variant (vLLM only on a torch that is its pin's
    own, so 2.9.1), and detect, install and plan agree with it (one rule, rules/pairing.py)."""
    facts = host(catalog, H100_HOST, gpus=("9.0",), driver="580.95.05")
    decision = decide(facts, catalog, with_("torchvision", "vllm"))
    assert decision.build.torch == "2.9.1" and decision.build.gpu_arch == "sm90"
    assert decision.detail.set_shape.generated == tuple(c.package for c in decision.companions)
    assert [c.torch_relation for c in decision.companions] == ["generated", "generated"]
    (why,) = [reason for reason in decision.reasons if reason.startswith("no published torchvision, vllm")]
    assert "each bring a torch of their own build" in why and "built from source" in why
    machine = ["--cpuinfo", str(cpuinfo_path(H100_HOST)), "--gpu", "9.0", "--driver", "580.95.05"]
    detected = runner.invoke(app, ["detect", "--format", "json", *machine, "--with", "torchvision,vllm"])
    assert detected.exit_code == 0 and json.loads(detected.stdout)["set"]["generated"] == list(
        decision.detail.set_shape.generated
    )
    published = runner.invoke(
        app, ["install", *machine, "--with", "torchvision,vllm", "--org", "acme", "--dry-run", "--dir", str(tmp_path)]
    )
    assert published.exit_code == 2 and "install it with --build" in published.stderr
    built = runner.invoke(
        app, ["install", *machine, "--with", "torchvision,vllm", "--build", "--dry-run", "--dir", str(tmp_path)]
    )
    assert built.exit_code == 0, built.output
    build_line = next(line for line in built.stdout.splitlines() if "run: flox build" in line)
    assert build_line.split()[-3:] == list(decision.detail.set_shape.installed)


def test_every_piece_of_a_set_is_admitted_by_the_same_predicate(catalog) -> None:
    facts = host(catalog, H100_HOST, gpus=("9.0",), driver="580.95.05")
    decision = decide(facts, catalog, with_("vllm"))
    assert decision.build is not None and [c.project for c in decision.companions] == ["vllm"]
    assert not why_not(decision.build, facts, catalog)
    for companion in decision.companions:
        assert companion.axes == (
            decision.build.python,
            decision.build.cuda,
            decision.build.gpu_arch,
            decision.build.cpu_isa,
            decision.build.platform,
        )


def test_detect_json_keeps_the_torch_row_and_adds_one_row_per_companion() -> None:
    result = runner.invoke(
        app,
        [
            "detect",
            "--format",
            "json",
            "--cpuinfo",
            str(cpuinfo_path(H100_HOST)),
            "--gpu",
            "9.0",
            "--driver",
            "580.95.05",
            "--with",
            "torchvision",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["recommendation"]["package"] == "pytorch-python313-cuda13_1-sm90-avx512"
    (vision,) = data["companions"]
    assert vision["project"] == "torchvision" and vision["repo"] == "https://github.com/barstoolbluz/build-torchvision"
    assert vision["relation_to_recommendation"] == "a separate build of torch 2.10.0 from the same nixpkgs pin"
    assert "companions" not in json.loads(runner.invoke(app, ["detect", "--format", "json", "--no-gpu"]).stdout)
    from_env = runner.invoke(
        app,
        [
            "detect",
            "--format",
            "json",
            "--cpuinfo",
            str(cpuinfo_path(H100_HOST)),
            "--gpu",
            "9.0",
            "--driver",
            "580.95.05",
        ],
        env={"PICKVARIANT_WITH": "torchvision"},
    )
    assert json.loads(from_env.stdout)["companions"] == data["companions"]


@pytest.mark.parametrize(
    ("values", "given_as", "expected"),
    [
        (["torchvision,torchaudio"], "--with", ("torchvision", "torchaudio")),
        (["vllm", " VLLM ,", "torchvision"], "--with", ("vllm", "torchvision")),
    ],
)
def test_with_takes_repeated_and_comma_separated_projects(values, given_as, expected) -> None:
    assert projects_from(values, given_as) == expected


def test_an_unknown_project_is_bad_input_naming_where_it_came_from() -> None:
    with pytest.raises(BadInput, match=r"^--with 'torchtext': choose from torchvision, torchaudio, vllm$"):
        projects_from(["torchtext"], "--with")
    result = runner.invoke(app, ["detect", "--no-gpu"], env={"PICKVARIANT_WITH": "torchvision,nope"})
    assert result.exit_code == 2 and result.stderr.startswith("pickvariant: PICKVARIANT_WITH 'nope': choose from")


def test_a_companions_file_with_credentials_in_an_address_never_shows_them(tmp_path, catalog) -> None:
    from pickvariant.sources.flox.recipes.load import load_catalog
    from pickvariant.sources.flox.recipes.stack import companions_path

    secret = "glpat-COMPANION-SECRET"
    shipped = catalog.path
    site = tmp_path / "site.json"
    site.write_bytes(shipped.read_bytes())
    data = json.loads(companions_path(shipped).read_text())
    for row in data["companions"]:
        row["repo"] = row["repo"].replace("https://", f"https://ci-token:{secret}@")
    companions_path(site).write_text(json.dumps(data))
    result = runner.invoke(
        app,
        [
            "detect",
            "--format",
            "json",
            "--cpuinfo",
            str(cpuinfo_path(H100_HOST)),
            "--gpu",
            "9.0",
            "--driver",
            "580.95.05",
            "--with",
            "torchvision",
        ],
        env={"PICKVARIANT_CATALOG": str(site)},
    )
    assert result.exit_code == 0, result.output
    assert (
        secret not in result.output
        and json.loads(result.stdout)["companions"][0]["repo"] == "https://github.com/barstoolbluz/build-torchvision"
    )
    assert all(secret not in c.repo for c in load_stack(load_catalog(site)).companions)


def _flox_install_of_dry_run(machine: list[str], projects: str, tmp_path) -> list[str]:
    """The one `flox install` command line of `install --with PROJECTS --org acme --dry-run --format json`."""
    argv = ["install", *machine, "--with", projects, "--org", "acme", "--dir", str(tmp_path / "e"), "--dry-run"]
    dry = runner.invoke(app, [*argv, "--format", "json"])
    assert dry.exit_code == 0, dry.output
    steps = json.loads(dry.stdout)["steps"]
    (flox_install,) = [step["run"] for step in steps if step.get("run", [""])[:2] == ["flox", "install"]]
    return flox_install


@pytest.mark.parametrize(
    ("machine", "projects"),
    [
        (["--cpuinfo", str(cpuinfo_path(H100_HOST)), "--gpu", "9.0", "--driver", "580.95.05"], "torchvision"),
        (["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--no-gpu"], "torchvision"),
        (["--cpuinfo", str(cpuinfo_path(H100_HOST)), "--gpu", "9.0", "--driver", "580.95.05"], "vllm"),
    ],
)
def test_plan_with_builds_exactly_what_install_with_installs(machine, projects, tmp_path) -> None:
    """One set rule: the packages plan asks to build and publish for a node are the ones install puts in its
    environment (a companion with a torch of its own is installed alone, so the variant is not built)."""
    line = runner.invoke(app, ["detect", "--format", "json", "--compact", "--label", "n1", *machine])
    nodes = tmp_path / "nodes.jsonl"
    nodes.write_text(line.stdout)
    plan = json.loads(runner.invoke(app, ["plan", str(nodes), "--with", projects, "--format", "json"]).stdout)
    (chosen,) = plan["variants"]
    built = [build["package"] for build in chosen["builds"]]
    flox_install = _flox_install_of_dry_run(machine, projects, tmp_path)
    installed = [arg.removeprefix("acme/").split("@")[0] for arg in flox_install if arg.startswith("acme/")]
    assert built == installed and built
    detected = json.loads(runner.invoke(app, ["detect", "--format", "json", *machine, "--with", projects]).stdout)
    assert detected["set"]["installed"] == built


@pytest.mark.parametrize(
    ("dump", "gpu", "project", "passed_over"),
    [
        ("linux-rhel9-neoverse_v2", "9.0", "vllm", "pytorch-python313-cuda12_9-sm90-armv9"),  # Grace + H100
        ("linux-rhel7-haswell", "7.5", "torchaudio", "pytorch-python313-cuda12_8-sm75-avx2"),  # AVX2 + T4
    ],
)
def test_a_variant_the_set_passed_over_is_told_why_never_that_the_workload_prefers_another(
    catalog, dump, gpu, project, passed_over
) -> None:
    facts = host(catalog, dump, gpus=(gpu,), driver="580.95.05")
    decision = decide(facts, catalog, with_(project))
    assert decision.build is not None
    why = {wording.choice(rejection): wording.why(rejection) for rejection in decision.rejected}
    assert why[passed_over] == f"no {project} recipe is built on its PyTorch for this machine"
    # Every "prefers" reason is true: the variant it names ranks after the chosen one in the workload's order.
    order = [v.package for v in decision.candidates]
    for choice, said in why.items():
        if "prefers" in said and choice in order:
            assert order.index(choice) > order.index(decision.build.package), (choice, said)


def test_a_companion_is_installed_at_the_version_the_decision_chose_where_the_catalog_knows_it(tmp_path) -> None:
    """vllm-python313-cuda12_9-sm90-avx512 is vLLM 0.15.1 on one branch and another release on others: the set's
    install names the chosen release, as the variant is named with its PyTorch, not the newest published."""
    machine = ["--cpuinfo", str(cpuinfo_path(H100_HOST)), "--gpu", "9.0", "--driver", "580.95.05"]
    detected = json.loads(runner.invoke(app, ["detect", "--format", "json", *machine, "--with", "vllm"]).stdout)
    (vllm,) = detected["companions"]
    flox_install = _flox_install_of_dry_run(machine, "vllm", tmp_path)
    assert f"acme/{vllm['package']}@{vllm['version']}" in flox_install and vllm["version"]


def test_one_companion_built_on_the_variant_and_one_with_its_own_torch_are_two_torches(catalog) -> None:
    """The one set rule (rules/sets.py): a companion that imports the variant's recipe goes beside it; one with a
    torch of its own goes alone; both together hold two PyTorch builds, and the same name and torch release on
    another branch is not the variant's own derivation."""
    from pickvariant.rules.sets import builds_on, shape
    from pickvariant.sources.build import Companion

    variant = catalog.variant("pytorch-python313-cuda12_8-sm61-avx", "main")

    def companion(project: str, relation: str, branch: str = "main") -> Companion:
        return Companion(
            project=project,
            repo="r",
            branch=branch,
            package=f"{project}-python313-cuda12_8-sm61-avx",
            path=f".flox/pkgs/{project}.nix",
            version=None,
            python="3.13",
            gpu_arch="sm61",
            cpu_isa="avx",
            cuda="12.8",
            platform="x86_64-linux",
            torch=variant.torch,
            torch_pin=variant.nixpkgs_rev,
            torch_relation=relation,  # type: ignore[arg-type]
            torch_of=variant.package if relation == "identical" else None,
        )

    own, separate = companion("torchvision", "identical"), companion("torchaudio", "separate")
    assert shape(variant, [own]).installed == (variant.package, own.package)
    assert shape(variant, [separate]).installed == (separate.package,)
    mixed = shape(variant, [own, separate])
    assert isinstance(mixed, str) and own.package in mixed and separate.package in mixed
    elsewhere = companion("torchvision", "identical", branch="pytorch-2.10-python313")
    assert not builds_on(elsewhere, variant)  # same package and torch release, another branch: not identical


@pytest.mark.parametrize("projects", ["vllm", "torchvision,vllm"])
def test_a_set_that_exists_nowhere_here_names_pytorch_alone_as_what_would_help(projects) -> None:
    """A CPU-only machine asked for vLLM: no variant that runs here has a vLLM recipe, so exit 3, and what would help
    names the variant detect gives without --with (the answer a user can still have), in every format."""
    machine = ["--cpuinfo", str(cpuinfo_path("linux-rhel7-haswell")), "--no-gpu"]
    runner = cli_runner()
    alone = json.loads(runner.invoke(app, ["detect", "--format", "json", *machine]).stdout)["recommendation"]
    refused = runner.invoke(app, ["detect", "--format", "json", *machine, "--with", projects])
    assert refused.exit_code == 3, refused.output
    hints = json.loads(refused.stdout)["hints"]
    assert any(h.startswith("without --with, PyTorch alone is ") and alone["package"] in h for h in hints), hints
    text = runner.invoke(app, ["detect", *machine, "--with", projects]).stdout
    help_part = text.split("What would help", 1)[1]
    assert f"without --with, PyTorch alone is {alone['package']}" in help_part
