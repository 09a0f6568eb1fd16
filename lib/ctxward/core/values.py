"""`Value`: the one value idiom of everything a hook builds.

Two idioms, one rule: a type a hook builds (on the per-tool-call, per-prompt and compaction paths,
each a fresh interpreter) is a `Value`; a type only offline commands build (bank, audit, sessions
read offline, setup) is a frozen `@dataclass`, which costs ~0.6 ms a class to create and is not
worth it where a hook pays it on every run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_V = TypeVar("_V", bound="Value")


class Value:
    """A frozen record with slots: what `@dataclass(frozen=True, slots=True)` gives, by hand.

    Every hook is a fresh interpreter, and `@dataclass` generates and compiles its methods when
    the class is created: ~0.6 ms a class, paid on every run (bench/hook_latency.py). A subclass
    (a leaf: no further subclassing) lists its fields in `__slots__` (sorted, as ruff wants; the
    repr follows that order), annotates them, and sets them in `__init__` through `_set`. Equal
    when of the same class with equal fields; hashable when the fields are; assigning or
    deleting a field afterwards raises AttributeError. `replace` and `as_dict` stand in for
    `dataclasses.replace` and `dataclasses.asdict`.
    """

    __slots__: tuple[str, ...] = ()

    def _set(self, **fields: object) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot assign to {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Value)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((self.__class__, self._fields()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def replace(self: _V, **changes: object) -> _V:
        """A copy with `changes` made: what `dataclasses.replace` gives.

        The fields go back through `__init__` by name, so a subclass's `__init__` takes each
        field as a keyword of the same name; an unknown name is a TypeError.
        """
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        make: Callable[..., _V] = type(self)
        return make(**fields)

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, as `dataclasses.asdict` gives them.

        The keys follow the order the class annotates its fields in (a dataclass's field order;
        the JSON shows it), not the sorted `__slots__`. Nested Values become dicts; dicts, lists
        and tuples are copied, their items converted likewise; other values are kept as they are.
        """
        order = list(type(self).__annotations__)
        names = sorted(self.__slots__, key=order.index)  # ValueError for an unannotated field
        return {name: _plain(getattr(self, name)) for name in names}


def _plain(value: object) -> Any:
    """`value` for `Value.as_dict`: Values as dicts, containers copied (`dataclasses.asdict`)."""
    if isinstance(value, Value):
        return value.as_dict()
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    return value
