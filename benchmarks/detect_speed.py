"""How fast pickvariant detects and decides, against archspec's host detection measured in the same run.

    pip install -e '.[bench]' && python benchmarks/detect_speed.py [--runs 30] [--typer 0.24.2 --typer 0.29.2]

As processes (medians of --runs, the commands taking turns): `pickvariant detect --format json` against
`python -c "import archspec.cpu; archspec.cpu.host()"` (target ratio <= 1.0), beside the floors
that bound it: the interpreter's start, importing the library, importing typer (the CLI
framework), and detect through the typer CLI (what every other command costs).
In process (fresh interpreter per sample, ours and archspec's taking turns): import + facts + decision against import + host(); and,
with both loaded, one more facts + decision against one uncached host(), and the same with this
machine's GPUs and driver stated (/proc/cpuinfo read again, NVML not asked).
With --typer VERSION (repeatable) the typer CLI rows are measured again with that typer, installed
into a scratch directory (needs the package index). With --compare DIR the pickvariant package in DIR
(another commit's) is timed beside, in the same runs. On a machine with an NVIDIA driver it also
times `import pynvml` (which detection no longer pays for), the NVML queries detection makes, and the GPU-host
ratio: detect against archspec's host() plus `nvidia-smi --query-gpu`, with bytecode cached and without.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Bytecode caches as an installed package has them: with PYTHONDONTWRITEBYTECODE set (as in
# some CI images), an editable checkout would compile every module on every start.
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
PY = sys.executable
# This interpreter's base installation first on PATH, no environment active: `python3` is a plain interpreter there.
BASE_ON_PATH = {
    **{name: value for name, value in ENV.items() if name not in ("VIRTUAL_ENV", "CONDA_PREFIX")},
    "PATH": os.pathsep.join([os.path.dirname(getattr(sys, "_base_executable", PY)), ENV.get("PATH", os.defpath)]),
}

IN_PROCESS_OURS = """
import time, json, sys
start = time.perf_counter()
import pickvariant.api as api
imported = time.perf_counter()
catalog = api.default_catalog()
loaded = time.perf_counter()
detected = api.recommend()
detected.to_json()
first = time.perf_counter()

def warm(**stated):
    samples = []
    for _ in range(50):
        t = time.perf_counter(); api.recommend(**stated); samples.append(time.perf_counter() - t)
    samples.sort()
    return samples[len(samples) // 2]

# The same machine with its GPUs and driver stated: /proc/cpuinfo is read again, NVML is not asked.
driver = detected.facts.driver
stated = {"gpus": [str(gpu.compute_capability) for gpu in detected.facts.gpus],
          "driver": str(driver.version) if driver is not None and driver.version is not None else None}
print(json.dumps({"import": imported - start, "catalog": loaded - imported, "first": first - loaded,
                  "total": first - start, "warm": warm(), "warm_stated": warm(**stated)}))
"""
IN_PROCESS_ARCHSPEC = """
import time, json
start = time.perf_counter()
import archspec.cpu
imported = time.perf_counter()
archspec.cpu.host()
first = time.perf_counter()
host = archspec.cpu.host.__wrapped__  # lru_cache'd: time the detection itself
samples = []
for _ in range(50):
    t = time.perf_counter(); host(); samples.append(time.perf_counter() - t)
samples.sort()
print(json.dumps({"import": imported - start, "first": first - imported, "total": first - start, "warm": samples[len(samples) // 2]}))
"""
NVML = """
import time, json
t0 = time.perf_counter()
import pynvml
t1 = time.perf_counter()
from pickvariant.machine.gpu import query_nvml
from pickvariant.machine.nvml import Nvml
t2 = time.perf_counter()
report = query_nvml(Nvml())
t3 = time.perf_counter()
assert report == query_nvml(pynvml), "the direct binding and pynvml disagree"
print(json.dumps({"import_pynvml": t1 - t0, "queries": t3 - t2, "gpus": len(report.gpus)}))
"""


def median_wall_s(commands: dict[str, tuple[list[str], dict[str, str]]], runs: int) -> dict[str, float]:
    """Median wall time of each command. The commands take turns, run after run, so that a slow
    spell of a shared machine falls on all of them alike instead of on whichever ran then."""
    for command, env in commands.values():
        subprocess.run(command, capture_output=True, check=False, env=env)  # warm the page and bytecode caches once
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (command, env) in commands.items():
            start = time.perf_counter()
            subprocess.run(command, capture_output=True, check=False, env=env)
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(times) for name, times in samples.items()}


def median_json(codes: dict[str, str], runs: int) -> dict[str, dict[str, float]]:
    """Per program, the median of each figure it prints as JSON, one fresh interpreter per run; the programs take turns."""
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in codes}
    for _ in range(runs):
        for name, code in codes.items():
            rows[name].append(
                json.loads(subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True, env=ENV).stdout)
            )
    return {
        name: {key: statistics.median(row[key] for row in runs_of) for key in runs_of[0]}
        for name, runs_of in rows.items()
    }


def typer_env(version: str, scratch: Path) -> dict[str, str]:
    target = scratch / f"typer-{version}"
    if not target.exists():
        subprocess.run([PY, "-m", "pip", "install", "-q", "--target", str(target), f"typer=={version}"], check=True)
    return {**ENV, "PYTHONPATH": os.pathsep.join(filter(None, [str(target), ENV.get("PYTHONPATH")]))}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--typer", action="append", default=[], help="also measure the typer CLI with this typer version"
    )
    parser.add_argument(
        "--compare",
        metavar="DIR",
        help="also time the pickvariant package in DIR (another commit's) in the same run",
    )
    args = parser.parse_args()
    if subprocess.run([PY, "-c", "import archspec.cpu"], capture_output=True).returncode != 0:
        print("archspec is not installed: pip install archspec", file=sys.stderr)
        return 1
    import typer

    # The console script pip installs is what users run; `python -m` pays for runpy on top.
    script = Path(PY).parent / "pickvariant"
    as_module = [PY, "-m", "pickvariant", "detect", "--format", "json"]
    detect = [str(script), "detect", "--format", "json"] if script.exists() else as_module
    through_typer = [
        PY,
        "-c",
        "import sys; from pickvariant.cli.main import main; sys.exit(main(['detect', '--format', 'json']))",
    ]
    commands = {
        "python -c pass (interpreter start)": ([PY, "-c", "pass"], ENV),
        "archspec.cpu.host() (baseline)": ([PY, "-c", "import archspec.cpu; archspec.cpu.host()"], ENV),
        "import pickvariant.api (library floor)": ([PY, "-c", "import pickvariant.api"], ENV),
        f"import typer {typer.__version__} (CLI framework floor)": ([PY, "-c", "import typer"], ENV),
        "pickvariant detect --format json": (detect, ENV),
        "python -m pickvariant detect --format json": (as_module, ENV),
        f"same, through the typer {typer.__version__} CLI": (through_typer, ENV),
        # The wheels source's answer (issue 52: the fast path whatever the source), its environment read or not.
        "detect --source wheels --format json": ([*detect, "--source", "wheels"], ENV),
        "detect --source wheels --format json --python PY": ([*detect, "--source", "wheels", "--python", PY], ENV),
        # No --python, a plain interpreter first on PATH (not a venv's, whose files say enough; not a pyenv shim, a
        # bash script): it is started, while the rest of the program loads.
        "detect --source wheels --format json, base python3 on PATH": ([*detect, "--source", "wheels"], BASE_ON_PATH),
        # The text answers, both on entry's fast path (no typer, no rich); --explain's tree is the typer CLI's.
        "detect --source wheels (text)": ([*detect[:-2], "--source", "wheels"], ENV),
        "detect (text, recipes)": (detect[:-2], ENV),
        "detect --explain (text, recipes: typer and rich)": ([*detect[:-2], "--explain"], ENV),
    }
    if args.compare:
        compared = {**ENV, "PYTHONPATH": os.pathsep.join(filter(None, [args.compare, ENV.get("PYTHONPATH")]))}
        commands["python -m pickvariant detect --format json, compared"] = (as_module, compared)
        commands["python -m pickvariant detect --source wheels --format json, compared"] = (
            [*as_module, "--source", "wheels"],
            compared,
        )
        commands["python -m pickvariant detect --source wheels --format json, now"] = (
            [*as_module, "--source", "wheels"],
            ENV,
        )
    with tempfile.TemporaryDirectory() as scratch:
        for version in args.typer:
            env = typer_env(version, Path(scratch))
            commands[f"import typer {version}"] = ([PY, "-c", "import typer"], env)
            commands[f"detect --format json through the typer {version} CLI"] = (through_typer, env)
            commands[f"pickvariant list --format json with typer {version}"] = (
                [PY, "-m", "pickvariant", "list", "--format", "json", "--branch", "pytorch-2.10-python313"],
                env,
            )
        rows = median_wall_s(commands, args.runs)
    baseline = rows["archspec.cpu.host() (baseline)"]
    empty = rows["python -c pass (interpreter start)"]
    ours = rows["pickvariant detect --format json"]
    wheels = rows["detect --source wheels --format json"]
    print(f"runs per command: {args.runs}; python {sys.version.split()[0]}; python3 on PATH: {shutil.which('python3')}")
    print("as processes (median wall time, ratio to archspec):")
    for name, seconds in rows.items():
        print(f"  {name:58s} {ms(seconds)}  {seconds / baseline:5.2f}x")
    print(f"  ratio pickvariant / archspec:                             {ours / baseline:5.2f}  (target <= 1.00)")
    print(f"  ratio without interpreter start:                          {(ours - empty) / (baseline - empty):5.2f}")
    print(f"  ratio wheels source / archspec:                           {wheels / baseline:5.2f}  (target <= 1.00)")
    wheels_text, recipes_text = rows["detect --source wheels (text)"], rows["detect (text, recipes)"]
    print(
        f"  ratio wheels source, text answer / archspec:              {wheels_text / baseline:5.2f}  (target <= 1.00)"
    )
    print(
        f"  ratio recipes, text answer / archspec:                    {recipes_text / baseline:5.2f}  (target <= 1.00)"
    )
    in_process = median_json({"ours": IN_PROCESS_OURS, "archspec": IN_PROCESS_ARCHSPEC}, min(args.runs, 15))
    in_ours, in_archspec = in_process["ours"], in_process["archspec"]
    print("in process (median of fresh interpreters):")
    print(
        f"  archspec: import {ms(in_archspec['import'])}, first host() {ms(in_archspec['first'])}, total {ms(in_archspec['total'])}"
    )
    print(
        f"  pickvariant.api: import {ms(in_ours['import'])}, catalog {ms(in_ours['catalog'])}, first recommend() {ms(in_ours['first'])}, total {ms(in_ours['total'])}"
    )
    print(
        f"  cold ratio (import + first answer):                       {in_ours['total'] / in_archspec['total']:5.2f}  (target <= 1.00)"
    )
    print(
        f"  warm: recommend() {in_ours['warm'] * 1e6:.0f} us vs uncached host() {in_archspec['warm'] * 1e6:.0f} us: "
        f"ratio {in_ours['warm'] / in_archspec['warm']:5.2f}  (target <= 1.00)"
    )
    print(
        f"  warm with this machine's GPUs and driver stated (no NVML query): recommend() {in_ours['warm_stated'] * 1e6:.0f} us, "
        f"ratio {in_ours['warm_stated'] / in_archspec['warm']:5.2f}"
    )
    imports = subprocess.run([PY, "-X", "importtime", *as_module[1:]], capture_output=True, text=True, env=ENV).stderr
    roots = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in imports.splitlines()
        if line.startswith("import time:")
    }
    print(
        f"  modules detect --format json imports: cpuinfo {'YES' if 'cpuinfo' in roots else 'no'}, "
        f"typer/click/rich {'YES' if roots & {'typer', 'click', 'rich'} else 'no'}, "
        f"dataclasses/typing/tempfile {'YES' if roots & {'dataclasses', 'typing', 'tempfile'} else 'no'}, "
        f"pathlib/urllib {'YES' if roots & {'pathlib', 'urllib'} else 'no'}, pynvml {'yes' if 'pynvml' in roots else 'no'}"
    )
    if shutil.which("nvidia-smi") or Path("/proc/driver/nvidia/version").exists():
        nvml = median_json({"nvml": NVML}, min(args.runs, 10))["nvml"]
        print(
            f"NVML ({int(nvml['gpus'])} GPU(s)): import pynvml {ms(nvml['import_pynvml'])} (what detection no longer "
            f"imports), the queries through machine/nvml.py {ms(nvml['queries'])}"
        )
        print_gpu_host(script if script.exists() else None, args.runs, args.compare)
    else:
        print("NVML: no NVIDIA driver here; detection never imports pynvml then (libnvidia-ml.so.1 is checked first)")
    return 0


# What detection and archspec import, copied without bytecode for the second state (a container's read-only
# site-packages installed without it); the standard library keeps its bytecode, as images have it.
NO_BYTECODE_MODULES = (
    "pickvariant", "archspec", "pynvml", "typer", "click", "rich", "shellingham", "typing_extensions", "packaging",
    "markdown_it", "mdurl", "pygments", "annotated_doc",
)  # fmt: skip


def no_bytecode_env(scratch: Path, compare: str | None = None) -> dict[str, str]:
    import importlib.util

    target = scratch / "site"
    target.mkdir()
    if compare:
        shutil.copytree(  # the package and what it ships beside it (its catalog), without bytecode
            Path(compare),
            scratch / "compare",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    for name in NO_BYTECODE_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            shutil.copytree(origin.parent, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(origin, target / origin.name)
    return {**ENV, "PYTHONPATH": str(target), "PYTHONDONTWRITEBYTECODE": "1"}


def print_gpu_host(script: Path | None, runs: int, compare: str | None = None) -> None:
    """On a GPU host: detect against archspec's host() plus `nvidia-smi --query-gpu` (what a script that answers the
    same question would run), in the same run, with bytecode cached and without it; with `compare`, another
    commit's pickvariant (a folder holding its package) beside it."""
    smi = ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"]
    detect = [PY, "-m", "pickvariant", "detect"] if script is None else [str(script), "detect"]
    with tempfile.TemporaryDirectory() as scratch:
        states = (
            ("bytecode cached", ENV),
            ("no bytecode (read-only site-packages)", no_bytecode_env(Path(scratch), compare)),
        )
        for state, env in states:
            commands = {
                "archspec.cpu.host()": ([PY, "-c", "import archspec.cpu; archspec.cpu.host()"], env),
                "nvidia-smi --query-gpu": (smi, env),
                "pickvariant detect --format json": ([*detect, "--format", "json"], env),
                "pickvariant detect (text)": (detect, env),
            }
            if state.startswith("no bytecode") or script is None:  # the copies are read through PYTHONPATH
                commands["pickvariant detect --format json"] = (
                    [PY, "-m", "pickvariant", "detect", "--format", "json"],
                    env,
                )
                commands["pickvariant detect (text)"] = ([PY, "-m", "pickvariant", "detect"], env)
            # The wheels source on the same host (issue 52: every source, every format), its environment named.
            wheel = [*commands["pickvariant detect (text)"][0], "--source", "wheels", "--python", PY]
            commands["pickvariant detect --source wheels --format json"] = ([*wheel, "--format", "json"], env)
            commands["pickvariant detect --source wheels (text)"] = (wheel, env)
            if compare:
                where = str(Path(scratch) / "compare") if state.startswith("no bytecode") else compare
                other = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [where, env.get("PYTHONPATH")]))}
                commands["the compared commit's detect --format json"] = (
                    [PY, "-m", "pickvariant", "detect", "--format", "json"],
                    other,
                )
            rows = median_wall_s(commands, runs)
            floor = rows["archspec.cpu.host()"] + rows["nvidia-smi --query-gpu"]
            print(f"GPU host, {state} (median of {runs}, the commands taking turns):")
            for name, seconds in rows.items():
                print(f"  {name:58s} {ms(seconds)}")
            for name in [name for name in rows if "detect" in name]:
                print(f"  {name} / (archspec + nvidia-smi): {rows[name] / floor:5.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
