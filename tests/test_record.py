"""pickvariant._base.records: the frozen value types behave as the frozen dataclasses they replace."""

from __future__ import annotations

import copy
import pickle
from functools import cached_property

import pytest

from pickvariant._base.records import FrozenRecordError, fields, ordered_record, record, replace
from pickvariant._base.versions import ComputeCapability, parse_driver_version


@record
class Line:
    cuda: str
    packages: tuple[str, ...] = ()
    note: str | None = None

    @cached_property
    def tag(self) -> str:
        return self.cuda.replace(".", "_")


def test_fields_come_from_annotations_in_order_with_class_defaults() -> None:
    assert fields(Line) == ("cuda", "packages", "note")
    line = Line("13.0")
    assert (line.cuda, line.packages, line.note) == ("13.0", (), None)
    assert Line("13.0", note="x") == Line(cuda="13.0", packages=(), note="x")


def test_a_record_cannot_be_changed_after_construction() -> None:
    line = Line("13.0")
    with pytest.raises(FrozenRecordError):
        line.cuda = "12.9"  # type: ignore[misc]
    with pytest.raises(FrozenRecordError):
        del line.note
    with pytest.raises(AttributeError):  # as dataclasses.FrozenInstanceError is one
        line.extra = 1  # type: ignore[attr-defined]
    # cached_property still works on a frozen record: computed once, stored, the same object the second time.
    assert "tag" not in vars(line)
    first = line.tag
    assert first == "13_0" and vars(line)["tag"] is first and line.tag is first


def test_equality_and_hash_follow_the_values_and_the_class() -> None:
    assert Line("13.0", ("a",)) == Line("13.0", ("a",)) and hash(Line("13.0", ("a",))) == hash(Line("13.0", ("a",)))
    assert Line("13.0") != Line("12.9")

    @record
    class Other:
        cuda: str
        packages: tuple[str, ...] = ()
        note: str | None = None

    assert Line("13.0") != Other("13.0")  # same values, another type: not equal, as with dataclasses
    assert len({Line("13.0"), Line("13.0"), Line("12.9")}) == 2


def test_repr_names_every_field() -> None:
    assert repr(Line("13.0", ("p",))) == "Line(cuda='13.0', packages=('p',), note=None)"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing required argument 'cuda'"),
        (("13.0", (), None, "extra"), {}, "takes 3 positional arguments but 4 were given"),
        (("13.0",), {"cuda": "12.9"}, "multiple values for argument 'cuda'"),
        (("13.0",), {"colour": "red"}, "unexpected keyword argument 'colour'"),
    ],
)
def test_wrong_arguments_are_refused_as_python_refuses_them(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        Line(*args, **kwargs)


def test_definitions_a_dataclass_refuses_are_refused() -> None:
    with pytest.raises(TypeError, match="mutable default"):

        @record
        class Shared:
            items: list[str] = []  # noqa: RUF012  # the point of the test

    with pytest.raises(TypeError, match="without a default follows"):

        @record
        class Misordered:
            first: int = 0
            second: int  # type: ignore[misc]


def test_replace_changes_named_fields_and_refuses_unknown_ones() -> None:
    line = Line("13.0", ("a",))
    assert replace(line, note="n") == Line("13.0", ("a",), "n") and line.note is None
    with pytest.raises(TypeError, match="unexpected keyword"):
        replace(line, colour="red")


def test_ordered_records_compare_field_by_field_and_only_with_their_own_kind() -> None:
    @ordered_record
    class Pair:
        major: int
        minor: int

    assert sorted([Pair(9, 0), Pair(8, 6), Pair(8, 9)]) == [Pair(8, 6), Pair(8, 9), Pair(9, 0)]
    assert Pair(8, 0) <= Pair(8, 0) < Pair(8, 1) and Pair(9, 0) > Pair(8, 9) >= Pair(8, 9)
    with pytest.raises(TypeError):
        Pair(8, 0) < (8, 1)  # noqa: B015  # the comparison itself is what is tested
    with pytest.raises(TypeError):
        Line("1") < Line("2")  # type: ignore[operator]  # noqa: B015  # an unordered record has no <


def test_a_method_the_class_writes_itself_is_kept() -> None:
    # DriverVersion compares padded parts: 580.65 == 580.65.0, which field-by-field equality would deny.
    assert parse_driver_version("580.65") == parse_driver_version("580.65.0")
    assert hash(parse_driver_version("580.65")) == hash(parse_driver_version("580.65.0"))
    assert str(ComputeCapability(9, 0)) == "9.0"


def test_records_survive_copy_and_pickle_unchanged() -> None:
    line = Line("13.0", ("a",), "n")
    assert copy.copy(line) == line and copy.deepcopy(line) == line
    assert pickle.loads(pickle.dumps(line)) == line
