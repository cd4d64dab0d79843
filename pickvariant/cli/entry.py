"""The console entry point: `detect --format json` without typer, every other command line through it.

`pickvariant detect --format json`, and the text answer, with well-formed options are answered through
pickvariant.api (the JSON of every source through commands/detect.json_text, the text through
commands/detect.answer_text: the source's pipeline's, what the typer CLI prints too) without importing typer, click
or rich: importing them costs more than
detecting and deciding (benchmarks/detect_speed.py). The options are parsed with the same declarations the typer CLI is
built from (options.py); every other command line, including every malformed one and every
--help, goes to the typer app (main.py), which alone owns usage errors and help text.
"""

from __future__ import annotations

import sys

# Only these are imported before main() runs: a Ctrl-C while the rest loads (tens of milliseconds) ends the command
# as a later one does ("pickvariant: interrupted", 130), never with a traceback.
from pickvariant._base.errors import Interrupted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from pickvariant._base.request import Request


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("pickvariant: interrupted", file=sys.stderr)
        return Interrupted.exit_code
    except ImportError as error:  # a package pickvariant needs is missing or does not load: one line, exit 1
        from pickvariant.cli import console

        ending = console.exit_for(error)
        if ending is None:
            raise
        print(ending[0], file=sys.stderr)
        return ending[1]
    finally:
        gpu = sys.modules.get("pickvariant.machine.gpu")
        if gpu is not None:
            gpu.discard_early()  # a reading no command took is no later call's
        environment = sys.modules.get("pickvariant.machine.environment")
        if environment is not None:
            environment.discard_early()  # and an interpreter no command asked is stopped


def _main(argv: list[str] | None) -> int:
    import os

    args = list(sys.argv[1:] if argv is None else argv)
    if _detects_gpus(args, os.environ):
        # NVML's library load, init and queries (tens of ms, in C) run while the rest of the program loads.
        from pickvariant.machine.gpu import start_early

        start_early()
    from pickvariant import pipelines
    from pickvariant._base.errors import PickVariantError
    from pickvariant.cli import console, plainline
    from pickvariant.cli import options as commandline

    values = plainline.parse_plain_detect(args, ("json", "text"))
    source = None if values is None else plainline.plain_source(values, os.environ)
    pipeline = None if source is None else pipelines.of(source)
    # The text answer needs no typer either (a --explain tree is rich's: the typer CLI draws it).
    as_text = values is not None and values["format"] == "text"
    if (
        values is None
        or source is None
        or pipeline is None
        or (as_text and values["explain"] and pipeline.explain_drawn)
    ):
        from pickvariant.cli.main import main as cli_main

        return cli_main(args)
    if not console.prepare_streams():
        return 1
    try:
        label = commandline.detect_label(values, os.environ, str(values["format"]))
        # --python and --wheel-index, where given, are in it (a source that does not take them refused them)
        request = commandline.request_from({**values, "source": source.name})
        if pipeline.reads_environment and source.reads_python:  # its interpreter runs meanwhile
            _start_environment(request, os.environ)
        if as_text:
            return _text(request, bool(values["explain"]))
        from pickvariant.commands.detect import json_text

        text, error = json_text(request, bool(values["compact"]), label)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (PickVariantError, KeyboardInterrupt) as error:
        line, code = console.exit_for(error)  # type: ignore[misc]  # both kinds have an exit
        print(line, file=sys.stderr)
        return code
    except OSError as error:
        code = console.output_failed(error)
        if code is None:
            ending = console.exit_for(error)
            if ending is None:
                raise
            print(ending[0], file=sys.stderr)
            return ending[1]
        return code
    if error is not None:
        print(console.error_line(error), file=sys.stderr)
        return error.exit_code
    return 0


def _start_environment(request: Request, env: Mapping[str, str]) -> None:
    from pickvariant.machine.environment import start_early, wanted

    found = wanted(request, env)
    if found is not None:
        start_early(*found, env)


def _text(request: Request, explain: bool) -> int:
    """`detect` (text) without typer or rich, printed as the typer CLI prints it (cli/detect.py)."""
    from pickvariant.cli import console
    from pickvariant.commands.detect import answer_text

    text, error = answer_text(request, "text", console.text_width(), explain, console.colours())
    sys.stdout.write(text)
    sys.stdout.flush()
    if error is not None:
        print(console.error_line(error), file=sys.stderr)
        return error.exit_code
    return 0


def _detects_gpus(args: list[str], env: Mapping[str, str]) -> bool:
    """`detect` that will ask NVML: no GPU stated by option or variable (a wrong guess costs a worker that finds
    nothing, or whose answer no one takes)."""
    stated = any(arg in ("--gpu", "--no-gpu", "--help") or arg.startswith("--gpu=") for arg in args)
    return bool(args) and args[0] == "detect" and not stated and not env.get("PICKVARIANT_GPU")


def console_main() -> int:
    """The `pickvariant` command: main(), then a process exit that skips what cannot matter any more.

    At exit the interpreter's last collections would walk every object still alive (the catalog's
    thousand variants among them) to find garbage that dies with the process anyway: 6 ms on a
    2-core VM, more than deciding. Frozen objects are still finalised, just not searched for cycles.
    Not part of main(), which tests and other programs call in a process that goes on."""
    code = main()
    import gc

    gc.freeze()
    return code
