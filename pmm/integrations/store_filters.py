"""What :class:`pmm.integrations.PMMStore` matches: a search's ``filter`` on item values and
``list_namespaces``' match conditions, as LangGraph's stores read them.

    value_matches({"type": "note", "n": 3}, {"type": "note", "n": {"$gte": 2}})  # True
    namespace_matches(MatchCondition("prefix", ("users", "*")), ("users", "alice"))  # True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.store.base import MatchCondition

from pmm.errors import InvalidInputError

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def value_matches(value: dict[str, Any], conditions: dict[str, Any]) -> bool:
    """Whether ``value`` meets every condition: a field equal to a value, or operators
    (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``; an unknown one raises
    :class:`~pmm.errors.InvalidInputError`; values that do not compare do not match)."""
    for field, wanted in conditions.items():
        actual = value.get(field)
        if isinstance(wanted, dict) and wanted and all(k.startswith("$") for k in wanted):
            for op_name, operand in wanted.items():
                check = _OPERATORS.get(op_name)
                if check is None:
                    raise InvalidInputError(
                        f"unknown filter operator {op_name!r}: use one of {', '.join(_OPERATORS)}"
                    )
                try:
                    if not check(actual, operand):
                        return False
                except TypeError:
                    return False
        elif actual != wanted:
            return False
    return True


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` meets a ``prefix`` or ``suffix`` condition (``*``: any label)."""
    path = tuple(condition.path)
    if not path:
        return True
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
