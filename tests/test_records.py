"""fsmemory._records.NamedTuple builds the class typing.NamedTuple builds, field by field."""

from __future__ import annotations

import pickle
import typing

import pytest

from fsmemory._records import NamedTuple


class Point(NamedTuple):
    """A point."""

    x: int
    y: int | None = None

    def total(self) -> int:
        """``x + y``."""
        return self.x + (self.y or 0)

    @property
    def double(self) -> int:
        """``2 * x``."""
        return 2 * self.x


class TypedPoint(typing.NamedTuple):
    """A point."""

    x: int
    y: int | None = None


def test_a_record_is_the_tuple_typing_makes() -> None:
    point, typed = Point(1), TypedPoint(1)
    assert repr(point) == "Point(x=1, y=None)" and repr(typed) == "TypedPoint(x=1, y=None)"
    assert tuple(point) == tuple(typed) == (1, None) and hash(point) == hash((1, None))
    assert Point._fields == TypedPoint._fields == ("x", "y")
    assert Point._field_defaults == TypedPoint._field_defaults == {"y": None}
    assert Point.__mro__ == (Point, tuple, object)
    assert Point(x=2, y=3) == Point(2, 3) and Point(2, y=3)._replace(y=4) == (2, 4)
    assert point._asdict() == {"x": 1, "y": None}
    assert Point.__annotations__ == {"x": "int", "y": "int | None"}
    assert typing.get_type_hints(Point) == typing.get_type_hints(TypedPoint)
    assert (Point.__doc__, Point.__module__, Point.__qualname__) == ("A point.", __name__, "Point")
    assert Point.__match_args__ == ("x", "y")
    assert (point.total(), point.double) == (1, 2)
    assert pickle.loads(pickle.dumps(Point(3, 4))) == Point(3, 4)
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]


def test_a_record_is_immutable_and_slotted() -> None:
    point = Point(1)
    with pytest.raises(AttributeError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        point.z = 2  # type: ignore[attr-defined]


def test_a_record_is_refused_what_typing_refuses() -> None:
    with pytest.raises(TypeError, match="without a default follows"):

        class Gap(NamedTuple):
            a: int = 1
            b: int  # type: ignore[misc]

    with pytest.raises(AttributeError, match="_replace"):

        class Reserved(NamedTuple):
            a: int

            def _replace(self) -> None:  # type: ignore[misc,override]
                pass

    with pytest.raises(TypeError):

        class Mixed(NamedTuple, Exception):  # type: ignore[misc]
            a: int
