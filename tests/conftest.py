"""Shared by every test folder: the suite's helper modules (``store_helpers``,
``mind_helpers``, ``consolidate_helpers``, ``fake_openai``) are imported by name from here.

The tests mirror the package: ``tests/storage/`` for ``pmm/storage/`` and so on.
``tests/storage/conformance/`` is the behaviour suite every storage backend must pass: it
runs on SQLite always, and on PostgreSQL (and PostgreSQL with pgvector) where the binaries
exist (fixtures in ``tests/storage/conftest.py``).
"""

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
