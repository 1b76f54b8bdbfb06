"""Immutable records (``NamedTuple`` classes) defined without ``typing`` at run time.

:class:`typing.NamedTuple` turns each field's annotation into a ``typing.ForwardRef``
when the class is defined and compiles its text (``from __future__ import annotations``
makes every annotation a string): about 75k instructions a field, for a check no one
reads; the nine records the first line ``from fsmemory import KnowledgeMemory`` defines
cost it about 4M instructions more this way (of about 200M). Here the same class is built with
:func:`collections.namedtuple` and the annotations are kept as written; a type checker
sees :class:`typing.NamedTuple` itself::

    from fsmemory._records import NamedTuple

    class Point(NamedTuple):
        x: int
        y: int = 0

The class is what ``typing.NamedTuple`` makes: a subclass of :class:`tuple` with the
fields as read-only attributes, defaults for the last ones, ``_replace`` / ``_asdict``,
and the methods, properties and docstring of the class body.
"""

from __future__ import annotations

import collections
import itertools

TYPE_CHECKING = False  # True for type checkers; ``typing`` itself is not imported

__all__ = ["NamedTuple"]

# Names a record's body may not set: the tuple machinery ``namedtuple`` defines.
_RESERVED = frozenset(
    {
        "__new__",
        "__init__",
        "__slots__",
        "__getnewargs__",
        "_fields",
        "_field_defaults",
        "_make",
        "_replace",
        "_asdict",
        "_source",
    }
)
# What the class statement puts in every body; namedtuple sets its own.
_STATEMENT = frozenset({"__module__", "__qualname__", "__annotations__"})


if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple  # what type checkers see

else:

    class _RecordMeta(type):
        def __new__(
            mcls, typename: str, bases: tuple[type, ...], namespace: dict[str, object]
        ) -> type:
            if not bases:  # NamedTuple itself, the base a record class names
                return super().__new__(mcls, typename, bases, namespace)
            if bases != (NamedTuple,):
                raise TypeError("a record class can only inherit from NamedTuple")
            annotations = namespace.get("__annotations__", {})
            assert isinstance(annotations, dict)
            fields = [str(name) for name in annotations]
            defaults = [namespace[name] for name in fields if name in namespace]
            for earlier, name in itertools.pairwise(fields):
                if earlier in namespace and name not in namespace:
                    raise TypeError(f"field {name} without a default follows field {earlier}")
            module = str(namespace["__module__"])
            record = collections.namedtuple(typename, fields, defaults=defaults, module=module)
            record.__qualname__ = str(namespace["__qualname__"])
            record.__annotations__ = dict(annotations)
            for key, value in namespace.items():
                if key in _RESERVED:
                    raise AttributeError(f"cannot overwrite NamedTuple attribute {key}")
                if key not in _STATEMENT and key not in annotations:
                    setattr(record, key, value)
            return record

    class NamedTuple(metaclass=_RecordMeta):
        """Base of a record class (see the module): ``class R(NamedTuple): ...``."""
