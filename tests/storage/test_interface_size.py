"""The storage interface stays narrow: each backend writes at most 30 public calls of its
own, and everything the shared layer (:mod:`pmm.storage.shared`) defines is written once.

The figure, for one store class: its public callable attributes whose defining class (the
first in its MRO that holds the name) lives in the backend's package. Printed by::

    python -m pytest tests/storage/test_interface_size.py -q -s
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from pmm.storage.postgres import PostgresEventStore
from pmm.storage.sqlite import EventStore

MAX_OWN = 30
SHARED_PRIVATE = ("_check", "__enter__", "__exit__", "__repr__")
"""Private calls the shared layer writes once too (the entry check, the context manager)."""
BACKENDS = [(EventStore, "pmm.storage.sqlite"), (PostgresEventStore, "pmm.storage.postgres")]


def defining_class(cls: type, name: str) -> type:
    return next(k for k in cls.__mro__ if name in vars(k))


def own_public_callables(cls: type, package: str) -> list[str]:
    """Public callables of ``cls`` defined by a class of ``package``."""
    return sorted(
        name
        for name in dir(cls)
        if not name.startswith("_")
        and callable(getattr(cls, name))
        and defining_class(cls, name).__module__.startswith(package + ".")
    )


def shared_methods() -> dict[str, object]:
    """What the shared layer implements (not the primitives it declares), by name."""
    from pmm.storage.shared import SharedLog

    found: dict[str, object] = {}
    for klass in reversed(SharedLog.__mro__):
        if not klass.__module__.startswith("pmm.storage.shared"):
            continue
        for name, value in vars(klass).items():
            written = callable(value) and not getattr(value, "__isabstractmethod__", False)
            if written and (not name.startswith("_") or name in SHARED_PRIVATE):
                found[name] = value
    return found


@pytest.mark.parametrize(("cls", "package"), BACKENDS, ids=["sqlite", "postgres"])
def test_each_backend_writes_at_most_30_public_calls_of_its_own(cls: type, package: str) -> None:
    own = own_public_callables(cls, package)
    print(f"\n{cls.__name__}: {len(own)} own public callables: {', '.join(own)}")
    assert len(own) <= MAX_OWN, own


@pytest.mark.parametrize(("cls", "package"), BACKENDS, ids=["sqlite", "postgres"])
def test_no_backend_overrides_what_the_shared_layer_writes(cls: type, package: str) -> None:
    methods = shared_methods()
    assert len(methods) >= 30  # the layer exists and holds the conveniences
    overridden = {
        name: defining_class(cls, name).__qualname__
        for name, value in methods.items()
        if vars(defining_class(cls, name)).get(name) is not value
    }
    assert overridden == {}


@pytest.mark.parametrize(("cls", "package"), BACKENDS, ids=["sqlite", "postgres"])
def test_each_backend_writes_every_primitive(cls: type, package: str) -> None:
    from pmm.storage.shared import Primitives

    primitives = sorted(
        name
        for name, value in vars(Primitives).items()
        if getattr(value, "__isabstractmethod__", False)
    )
    assert not inspect.isabstract(cls)
    assert {p: defining_class(cls, p).__module__.startswith(package + ".") for p in primitives} == {
        p: True for p in primitives
    }


def _code_strings(tree: ast.AST) -> list[str]:
    """String constants of a module that are not docstrings."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    ]  # fmt: skip


def test_the_shared_layer_never_names_a_backend() -> None:
    """No shared code can branch on its backend: it imports none, and no string or name in
    its code (docstrings aside) says sqlite or postgres."""
    import pmm.storage.shared as shared

    for path in sorted(Path(shared.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = [
            alias.name if isinstance(node, ast.Import) else node.module or ""
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        ]
        names = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]
        names += [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)]
        for text in [*imported, *names, *_code_strings(tree)]:
            assert "sqlite" not in text.lower() and "postgres" not in text.lower(), (path, text)
