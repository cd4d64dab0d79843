"""What every typer command shares: options from the declarations in options.py, one way to end on an error,
the Request from the parsed values, the catalog, and whether an option was given."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import typer

from pickvariant import api
from pickvariant._base import interrupts
from pickvariant._base.errors import PickVariantError
from pickvariant._base.request import Request
from pickvariant.cli import console
from pickvariant.cli import options as commandline
from pickvariant.cli import typer_options as opt

if TYPE_CHECKING:
    from pickvariant.machine.facts import HostFacts
    from pickvariant.rules.decision import RecipeDecision
    from pickvariant.sources.build import Catalog

F = TypeVar("F", bound=Callable[..., Any])


def _typer_parameter(name: str, option: commandline.Option) -> inspect.Parameter:
    choice = opt.CHOICES.get(option.choices)
    if choice is not None and option.default is None:  # a choice one may leave out (--platform)
        annotation: object = choice | None
        default = None
    else:
        annotation = choice if choice is not None else opt.KINDS[option.kind]
        default = choice(option.default) if choice is not None else option.default
    declared = (
        typer.Option(option.flag, help=option.described, metavar=option.metavar)
        if option.metavar
        else typer.Option(option.flag, help=option.described)
    )
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[annotation, declared]
    )


def declared(options: Mapping[str, commandline.Option] = {}) -> Callable[[F], F]:
    """Give a command the typer parameters of commandline's declarations: `options` first (their values
    reach the command's **values), then its own, each whose default is a commandline.Option declared so."""

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        parameters = [_typer_parameter(name, option) for name, option in options.items()]
        for parameter in signature.parameters.values():
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                continue
            if isinstance(parameter.default, commandline.Option):
                parameters.append(_typer_parameter(parameter.name, parameter.default))
            else:
                parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY))
        # typer reads the parameters from __signature__, which type checkers do not know on a function.
        setattr(command, "__signature__", signature.replace(parameters=parameters))  # noqa: B010
        return command

    return decorate


def exits_on_error(command: F) -> F:
    """End the command as console.exit_for says: one line on stderr and its exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with interrupts.raising():
                return command(*args, **kwargs)
        except (PickVariantError, KeyboardInterrupt, OSError, ImportError) as error:
            ending = console.exit_for(error)
            if ending is None:
                raise
            typer.echo(ending[0], err=True)
            raise typer.Exit(ending[1]) from None

    return cast(F, wrapper)


def request_of(values: Mapping[str, Any]) -> Request:
    return commandline.request_from(
        {name: value.value if isinstance(value, Enum) else value for name, value in values.items()}
    )


def decided(request: Request) -> tuple[Catalog, HostFacts, RecipeDecision]:
    choice = api.recommend_request(request, catalog=load_catalog())
    return choice.catalog, choice.facts, choice.decision


def given_on_command_line(parameter: str) -> bool:
    """Was this option given on the command line (not left at its default)?"""
    import importlib

    # The click this typer runs on: newer typer carries its own copy (typer._click), older ones use click itself.
    package = next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "UsageError").__module__
    click = importlib.import_module(package.rsplit(".", 1)[0] + ".globals")
    core = importlib.import_module(package.rsplit(".", 1)[0] + ".core")
    source = click.get_current_context().get_parameter_source(parameter)
    return bool(source is core.ParameterSource.COMMANDLINE)


def load_catalog() -> Catalog:
    return api.read_catalog()
