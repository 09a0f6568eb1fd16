"""`Value`: fields from annotations, as a frozen dataclass with slots would have them."""

from __future__ import annotations

import pytest

from ctxward.core.values import Value, field


class Point(Value):
    y: int
    x: int
    tags: list[str] = field(default_factory=list)
    label: str = ""


def test_fields_are_taken_in_the_order_annotated_or_by_name():
    assert Point(2, 1) == Point(x=1, y=2) == Point(2, x=1)
    assert Point(2, 1, ["a"], "p").as_dict() == {"y": 2, "x": 1, "tags": ["a"], "label": "p"}


def test_defaults_and_fresh_factories():
    first, second = Point(0, 0), Point(0, 0)
    assert first.label == "" and first.tags == []
    assert first.tags is not second.tags  # made afresh, never shared between values


@pytest.mark.parametrize(
    "make",
    [
        lambda: Point(1),  # x missing
        lambda: Point(1, 2, [], "", "extra"),
        lambda: Point(1, 2, y=3),  # y twice
        lambda: Point(1, 2, colour="red"),
    ],
)
def test_a_wrong_call_is_a_type_error(make):
    with pytest.raises(TypeError):
        make()


def test_frozen_slotted_and_hashable_by_fields():
    point = Point(1, 2, label="p")
    with pytest.raises(AttributeError):
        point.x = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del point.label  # type: ignore[misc]
    assert not hasattr(point, "__dict__")
    assert Point.__slots__ == ("label", "tags", "x", "y")
    assert repr(point) == "Point(label='p', tags=[], x=2, y=1)"
    assert point.replace(x=5) == Point(1, 5, label="p")
    with pytest.raises(TypeError):
        hash(point)  # a list field: unhashable, as a frozen dataclass's would be
    assert hash(Point(1, 2, tags=(), label="q")) == hash(Point(1, 2, tags=(), label="q"))  # type: ignore[arg-type]
