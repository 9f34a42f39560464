"""A backend outside PMM runs the published conformance suite (:mod:`pmm.testing`).

The test module of docs/guides/writing-a-backend.md (a ``MyStore`` subclass of the SQLite
store standing in for a third-party backend, and the ``pmm_backend`` fixture) is written
into a fresh folder, as that backend's own repository would hold it. Then pytest runs it
in another process on a subset of the suite that reaches the log itself, its tamper
tests, window keys opened with options, ``Mind`` and ``PMMStore``. The tests pass;
without ``sql`` the tamper test is skipped, saying why; and a ``MyStore`` whose search
loses what it should find fails, through ``Mind`` and ``PMMStore`` too (they opened the
backend under test, not a SQLite file of their own).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from snippet_helpers import ROOT, blocks_of

PAGE = ROOT / "docs" / "guides" / "writing-a-backend.md"
SUBSET = [
    "test_appends_chain_and_read_back_alike",
    "test_verify_catches_an_edited_text_and_a_deleted_row",
    "test_each_user_has_her_own_chain_and_one_root_covers_them",
    "test_window_radius_change_rebuilds_the_keys",
    "test_remember_dream_recall_and_context_alike",
    "test_pmmstore_put_get_search_delete_alike",
]
BROKEN = '''

class MyStore(EventStore):  # noqa: F811
    """Loses what it should find: every word search comes back empty, and a session's
    latest summary is never there."""

    def search_text(self, query, **kwargs):
        return []

    def latest_summary(self, session_id, **kwargs):
        return None
'''


@dataclass
class Outcome:
    passed: list[str]
    failed: list[str]
    skipped: dict[str, str]
    output: str


def published_module() -> str:
    """The page's test module: its one Python block that defines ``pmm_backend``."""
    [block] = [b for b in blocks_of(PAGE) if "def pmm_backend" in b.source]
    return block.source


def run_project(tmp_path: Path, module: str, subset: list[str]) -> Outcome:
    """Write ``module`` as the only test module of a fresh project and run pytest on it,
    with this checkout's ``pmm`` first on the path."""
    project = tmp_path / "mystore-backend"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_conformance.py").write_text(module, encoding="utf-8")
    report = project / "report.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider",
         "-k", " or ".join(subset), f"--junitxml={report}", "-rs"],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert report.exists(), output
    outcome = Outcome([], [], {}, output)
    for case in ET.parse(report).iter("testcase"):
        name = case.attrib["name"]
        if case.find("skipped") is not None:
            outcome.skipped[name] = case.find("skipped").attrib.get("message", "")  # type: ignore[union-attr]
        elif case.find("failure") is not None or case.find("error") is not None:
            outcome.failed.append(name)
        else:
            outcome.passed.append(name)
    return outcome


def test_the_published_suite_passes_on_a_backend_outside_pmm(tmp_path: Path) -> None:
    outcome = run_project(tmp_path, published_module(), SUBSET)
    assert not outcome.failed and not outcome.skipped, outcome.output
    assert sorted(outcome.passed) == sorted(SUBSET), outcome.output


def test_without_sql_the_tamper_tests_are_skipped_saying_why(tmp_path: Path) -> None:
    module = published_module()
    line = next(x for x in module.splitlines() if x.strip().startswith("sql=run_sql"))
    outcome = run_project(tmp_path, module.replace(line + "\n", ""), SUBSET[:2])
    assert outcome.passed == [SUBSET[0]], outcome.output
    reason = outcome.skipped[SUBSET[1]]
    assert "'mystore' gives no SQL access" in reason, outcome.output


def test_a_broken_backend_fails_the_suite(tmp_path: Path) -> None:
    outcome = run_project(tmp_path, published_module() + BROKEN, SUBSET)
    assert sorted(outcome.failed) == sorted(
        [
            "test_window_radius_change_rebuilds_the_keys",
            "test_remember_dream_recall_and_context_alike",  # through Mind
            "test_pmmstore_put_get_search_delete_alike",  # through PMMStore
        ]
    ), outcome.output
    assert "test_appends_chain_and_read_back_alike" in outcome.passed


def test_importing_the_whole_suite_loses_no_test() -> None:
    """Each part's tests reach the module that imports the whole suite with ``*``: no
    two parts name a test or a fixture alike."""
    whole = importlib.import_module("pmm.testing.conformance")
    seen: dict[str, str] = {}
    for part in whole.PARTS:
        module = importlib.import_module(f"pmm.testing.conformance.{part}")
        for name, value in vars(module).items():
            is_fixture = type(value).__name__ == "FixtureFunctionDefinition"
            if getattr(value, "__module__", None) != module.__name__:
                continue  # imported, not defined here
            if name.startswith("test_") or is_fixture:
                assert name not in seen, f"{name} is in {seen.get(name)} and {part}"
                seen[name] = part
                assert getattr(whole, name) is value, name
    assert sum(n.startswith("test_") for n in seen) >= 60
