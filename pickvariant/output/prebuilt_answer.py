"""A prebuilt build's decision (any source of pipeline "prebuilt") as detect prints it: text (the answer first, then
the facts and why), JSON, Markdown, a requirements file pip installs as is, and the pyproject block that points uv at
the chosen index."""

from __future__ import annotations

import json

from pickvariant import __version__
from pickvariant._base.records import replace
from pickvariant._base.text import markdown_code, markdown_text, visible
from pickvariant.install.pip_command import index_url_for_installer, requirements
from pickvariant.machine.othergpu import VENDOR_NAMES
from pickvariant.output.present import JSON_SCHEMA_VERSION, hardware_json, markdown_notes, rejection_json
from pickvariant.rules import wording
from pickvariant.rules.decision import NEAREST, PrebuiltAnswer, PrebuiltDecision
from pickvariant.sources.accelerator import VENDOR

# The text answer's wrapping (output/answer.py, textwrap, shlex) loads only where a text or Markdown answer is made:
# the JSON line needs none of it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pickvariant.sources.registry import Source

ALTERNATIVES_SHOWN = 3


def recommendation_json(decision: PrebuiltDecision, source: Source) -> dict[str, Any] | None:
    build = decision.build
    if build is None:
        return None
    return {
        "source": source.name,
        "torch": build.label,
        "release": build.torch,
        "variant": build.index,
        "index_url": decision.detail.index_url,
        "from_pypi": decision.detail.from_pypi,
        "python": decision.detail.python,
        "python_tag": decision.detail.python_tag,
        "platform": build.platform,
        "cuda": build.cuda,
        "min_driver": decision.detail.min_driver,
        "sass": [str(capability) for capability in build.sass],
        "ptx": [str(capability) for capability in build.ptx],
        "ptx_known": build.ptx_known,
        "pypi_default": build.default_index,
        "requirements": source.part("packaging").pins(
            build, decision.companions, decision.detail.from_pypi, decision.detail.python_tag
        ),
        "companions": [
            {"project": pair.project, "version": pair.version, "requires": pair.requires}
            for pair in decision.companions
        ],
        "sources": list(build.sources),
    }


def prebuilt_json(answer: PrebuiltAnswer) -> dict[str, Any]:
    decision, environment = answer.decision, answer.environment
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "pickvariant": __version__,
        "source": answer.source.name,
        "hardware": hardware_json(answer.facts),
        "catalog": {"facts_compiled": answer.catalog_of_builds().facts_compiled, "index_root": answer.index_root},
        "recommendation": recommendation_json(decision, answer.source),
        "build": None if decision.build is None else replace(decision.build, source=answer.source.name).as_json(),
        "environment": None
        if environment is None
        else {
            "interpreter": environment.interpreter,
            "given_as": environment.given_as,
            "python": environment.version,
            "python_tag": environment.tag,
            "installed": dict(environment.installed),
            "torch_runs_here": decision.detail.installed_fits,
            "said": decision.detail.installed_said,
        },
        "cpu_dispatch": decision.detail.dispatch,
        "reasons": list(decision.reasons),
        "rejected": [rejection_json(rejection, answer.catalog_of_builds().nouns) for rejection in decision.rejected],
        "hints": list(decision.hints),
        "left_out": list(decision.detail.left_out),
        "sources": dict(answer.facts.sources),
        "notes": list(answer.facts.notes),
    }


def install_words(answer: PrebuiltAnswer) -> list[str]:
    """The command that installs the answer (its source's packaging part's: pip's for wheels), for copying: its words
    quoted for the shell."""
    decision = answer.decision
    assert decision.build is not None
    # The environment's interpreter; else, for a free-threaded Python named, its own (`python3.13t`: `python3` is
    # the GIL build beside it); else python3, for the Python the answer was made for.
    free_threaded = decision.detail.python is not None and decision.detail.python.endswith("t")
    default = f"python{decision.detail.python}" if free_threaded else "python3"
    interpreter = answer.environment.interpreter if answer.environment is not None else default
    packaging = answer.source.part("packaging")
    argv = packaging.command(
        interpreter,
        decision.build,
        decision.companions,
        decision.detail.index_url,
        decision.detail.from_pypi,
        decision.detail.python_tag,
    )
    import shlex

    from pickvariant._base.text import visible

    # Each word as the shell takes it, and never a control character raw (a path may hold an escape sequence).
    return [visible(shlex.quote(word)) for word in argv]


def prebuilt_text_lines(answer: PrebuiltAnswer, width: int, every_alternative: bool = False) -> list[str]:
    from pickvariant.output.answer import laid_out, section

    width = max(width, 40)
    decision = answer.decision
    alternatives = _alternatives(answer, width, every_alternative)
    if every_alternative and decision.detail.left_out:
        title = f"Not judged (left out of the {answer.catalog_of_builds().nouns.build} catalog)"
        alternatives += section(title, [visible(row) for row in decision.detail.left_out], width)
    return laid_out(answer.facts, answer.hardware, decision, (_headline(answer, width), "Why", alternatives), width)


def _headline(answer: PrebuiltAnswer, width: int) -> list[str]:
    from pickvariant.output.answer import command_lines, wrapped

    decision, catalog = answer.decision, answer.catalog_of_builds()
    build = decision.build
    if build is None:
        return [f"No compatible {catalog.nouns.build} (why, and what would help, below)"]
    torch = build.torch if decision.detail.from_pypi else build.label  # PyPI's versions carry no local label
    names = ", ".join([f"torch {torch}", *(f"{p.project} {p.version}" for p in decision.companions)])
    on = f"{catalog.publisher}'s {visible(build.index)} {catalog.nouns.where}"
    where = "PyPI's own build" if decision.detail.from_pypi else on
    lines = wrapped(f"Recommendation: {visible(names)} ({where})", width, "", "  ")
    cuda = f", CUDA {build.cuda} ({decision.detail.driver_needed})" if build.cuda else ", CPU-only"
    cuda = f", {build.gpu_code.said}" if build.gpu_code is not None else cuda
    lines += wrapped(
        f"Python {decision.detail.python} ({decision.detail.python_tag}), {build.platform}{cuda}", width, "  "
    )
    lines += command_lines("  install it: ", install_words(answer), width)
    lines += wrapped(f"or: pickvariant install {answer.source.flag} (plans, asks, installs, verifies)", width, "  ")
    return lines


def _alternatives(answer: PrebuiltAnswer, width: int, every: bool) -> list[str]:
    from pickvariant.output.answer import section, wrapped

    decision, nouns, flag = answer.decision, answer.catalog_of_builds().nouns, answer.source.flag
    if decision.build is None or every:
        shown = list(decision.rejected)
        title = "Not chosen" if decision.build is None else "Every alternative"
    else:
        # Each other index first (why not cu130 is what a person asks), then the releases the order passed over.
        shown = [r for r in decision.rejected if r.subject[0] == "wheel_variant"]
        shown += [r for r in decision.rejected if r.kind in NEAREST and r not in shown][
            : max(0, ALTERNATIVES_SHOWN - len(shown))
        ]
        title = f"Other {nouns.wheres} and releases"
    said = [visible(f"{wording.choice(r, nouns)}: {wording.why(r, nouns)}") for r in shown]
    lines = section(title, said, width) if shown else []
    left = len(decision.rejected) - len(shown)
    if left:
        lines += wrapped(f"{left} more, each with why: pickvariant detect {flag} --explain", width, "")
    return lines


def prebuilt_markdown(answer: PrebuiltAnswer) -> str:
    from pickvariant.output.answer import fact_items

    decision, nouns = answer.decision, answer.catalog_of_builds().nouns
    build = decision.build
    out = [f"# pickvariant: PyTorch {nouns.build} for this machine", ""]
    if build is None:
        out += [f"**No compatible {nouns.build}.**", ""]
    else:
        where = markdown_code(decision.detail.index_url) if decision.detail.index_url else "PyPI (its own build)"
        out += [f"**Recommendation:** {markdown_code(build.label)} from {where}", ""]
        out += ["```sh", visible(" ".join(install_words(answer))), "```", ""]  # a line break would leave the fence
    warning, notes = markdown_notes(answer.facts)
    out += [*warning[1:], ""] if warning else []
    out += ["## This machine", "", *(f"- {markdown_text(item)}" for item in fact_items(answer.facts, answer.hardware))]
    environment = answer.environment
    if environment is not None:
        installed = ", ".join(f"{name} {version}" for name, version in environment.installed.items() if version)
        out.append(
            f"- Python {markdown_text(environment.version)} at {markdown_code(environment.interpreter)}: "
            f"{markdown_text(installed or 'no torch, torchvision or torchaudio installed')}"
        )
    out += ["", "## Why", "", *(f"- {markdown_text(reason)}" for reason in decision.reasons), ""]
    if decision.hints:
        out += ["## What would help", "", *(f"- {markdown_text(hint)}" for hint in decision.hints), ""]
    if decision.rejected:
        out += ["## Not chosen", ""]
        out += [
            f"- {markdown_text(wording.choice(r, nouns))}: {markdown_text(wording.why(r, nouns))}"
            for r in decision.rejected
        ]
        out.append("")
    if notes:
        out += ["## Notes", "", *notes, ""]
    return "\n".join(out)


def requirements_text(answer: PrebuiltAnswer) -> str:
    """A requirements file `pip install -r` installs as is: the index, then each pin. It needs the index as given, so
    it is the one output that carries the index's credentials: it says so in its first lines."""
    decision = answer.decision
    assert decision.build is not None
    build = decision.build
    gpus = ", ".join(f"GPU {gpu.index} ({gpu.compute_capability})" for gpu in decision.targets) or "no GPU"
    if build.gpu_code is not None:  # a ROCm or XPU build: the AMD or Intel GPUs it was chosen for
        gpus = f"{VENDOR_NAMES[VENDOR[build.gpu_code.family]]} GPUs ({build.gpu_code.said})"
    header = [
        f"# pickvariant {__version__}: torch {build.label} for {build.platform}, Python {decision.detail.python}; {gpus}"
    ]
    header += _credentials_note(answer)
    index = index_url_for_installer(answer)
    lines = [f"--index-url {index}"] if index is not None else ["# PyPI's own build: the installer's default index"]
    return "\n".join([*header, *lines, *requirements(build, decision.companions, decision.detail.from_pypi)]) + "\n"


def _credentials_note(answer: PrebuiltAnswer) -> list[str]:
    if answer.index_root_with_credentials is None:
        return []
    return ["# this file holds the index's credentials (user:password@, as given): keep it private"]


def pyproject_text(answer: PrebuiltAnswer) -> str:
    """The [[tool.uv.index]] and [tool.uv.sources] blocks that point torch (and its companions) at the chosen index."""
    decision = answer.decision
    assert decision.build is not None
    build = decision.build
    name = f"pytorch-{build.index}"
    pins = ", ".join(json.dumps(pin) for pin in requirements(build, decision.companions, decision.detail.from_pypi))
    projects = ["torch", *(pair.project for pair in decision.companions)]
    lines = [
        f"# pickvariant {__version__}: torch {build.label} for {build.platform}, Python {decision.detail.python}",
        *_credentials_note(answer),
        f"# [project] dependencies = [{pins}]",
    ]
    if decision.detail.from_pypi:  # PyPI's own build: the default index serves it, no index to name
        return (
            "\n".join([*lines, "# PyPI's own build: the default index (PyPI) serves it, no index block is needed"])
            + "\n"
        )
    lines += [
        "",
        "[[tool.uv.index]]",
        f"name = {json.dumps(name)}",
        f"url = {json.dumps(index_url_for_installer(answer))}",
        "explicit = true",
        "",
        "[tool.uv.sources]",
        *(f"{project} = [{{ index = {json.dumps(name)} }}]" for project in projects),
    ]
    return "\n".join(lines) + "\n"
