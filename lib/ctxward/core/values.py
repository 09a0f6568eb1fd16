"""`Value`: the one idiom for an immutable record.

One rule: a record that does not change once built is a `Value`, wherever it is built; a record
that is filled in as work goes on (an index being merged, an audit being counted) is a
`@dataclass(slots=True)`. A `Value` costs nothing to define, where a frozen `@dataclass` costs
~0.6 ms a class to create, paid by every hook and every command that imports it. The one
exception is `compress.scoring`, whose `Tables` keeps a compiled matcher out of equality and
repr (`dataclasses.field(compare=False)`), so its records stay dataclasses together.
"""

from __future__ import annotations

# `typing.TYPE_CHECKING` without importing typing (~3 ms): the hooks import this module. The
# decorator is `typing_extensions.dataclass_transform` for the type checker, a no-op at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar, TypeVar

    from typing_extensions import dataclass_transform

    _V = TypeVar("_V", bound="Value")
    _T = TypeVar("_T")
else:

    def dataclass_transform(**_: object) -> object:
        return lambda cls: cls


class _Factory:
    """A default made afresh for each value (what `field(default_factory=...)` gives)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], _T]) -> _T:
    """A default made afresh for each value: `bank: BankConfig = field(default_factory=BankConfig)`.

    Returns a marker the metaclass reads, typed as what it makes (as `dataclasses.field` is).
    """
    return _Factory(default_factory)  # type: ignore[return-value]


_MISSING = object()


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class _ValueType(type):
    """Makes a `Value` subclass's fields from its annotations: slots, defaults, `__init__`.

    The fields are the annotated names, in the order annotated; a class-level assignment is the
    field's default (moved out of the class, since a slot and a class attribute of one name
    cannot coexist). `__init__` takes them positionally in that order or by name, as a frozen
    dataclass's would; the repr lists them sorted, as the slots are.
    """

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> _ValueType:
        names = tuple(n for n in namespace.get("__annotations__", {}) if not n.startswith("_"))
        namespace["__slots__"] = tuple(sorted(names))
        namespace["_fields_annotated"] = names
        namespace["_defaults"] = {n: namespace.pop(n) for n in names if n in namespace}
        return super().__new__(mcs, name, bases, namespace)


class Value(metaclass=_ValueType):
    """A frozen record with slots: what `@dataclass(frozen=True, slots=True)` gives, by hand.

    Every hook is a fresh interpreter, and `@dataclass` generates and compiles its methods when
    the class is created: ~0.6 ms a class, paid on every run (bench/hook_latency.py). A subclass
    (a leaf: no further subclassing) annotates its fields, with defaults as class-level values
    (`field(default_factory=...)` for one made afresh each time), and gets slots and `__init__`
    from them. Equal when of the same class with equal fields; hashable when the fields are;
    assigning or deleting a field afterwards raises AttributeError. `replace` and `as_dict`
    stand in for `dataclasses.replace` and `dataclasses.asdict`.
    """

    __slots__: ClassVar[tuple[str, ...]] = ()
    _fields_annotated: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, object]] = {}

    def __init__(self, *args: object, **kwargs: object) -> None:
        names = self._fields_annotated
        if not kwargs and len(args) == len(names):  # every field, in order: the hot case
            for name, value in zip(names, args, strict=False):  # lengths compared above
                object.__setattr__(self, name, value)
            return
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} fields, not {len(args)}")
        for name, value in zip(names, args, strict=False):  # the first fields, by position
            if name in kwargs:
                raise TypeError(f"{type(self).__name__}: field {name!r} given twice")
            kwargs[name] = value
        for name in names:
            value = kwargs.pop(name, _MISSING)
            if value is _MISSING:
                value = self._defaults.get(name, _MISSING)
                if value is _MISSING:
                    raise TypeError(f"{type(self).__name__}: missing field {name!r}")
                if isinstance(value, _Factory):
                    value = value.make()
            object.__setattr__(self, name, value)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: no field {next(iter(kwargs))!r}")

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
        """A copy with `changes` made: what `dataclasses.replace` gives (an unknown name is a
        TypeError)."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        make: Callable[..., _V] = type(self)
        return make(**fields)

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, in the order annotated, as `dataclasses.asdict` gives them.

        Nested Values become dicts; dicts, lists and tuples are copied, their items converted
        likewise; other values are kept as they are.
        """
        return {name: _plain(getattr(self, name)) for name in self._fields_annotated}


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
