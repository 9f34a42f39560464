"""Every Python block in README.md and docs/ runs here, as written, in a fresh folder (the
``model`` they name is a fake chat model), unless it is marked ``<!-- not-run: reason -->``.
Also: the marker is recognised, the README stays short, and the generated reference pages
name every setting and every command."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from snippet_helpers import ROOT, Block, blocks_of, python_blocks

sys.path.insert(0, str(ROOT / "tests" / "integrations"))
from fake_models import fake_model

BLOCKS = python_blocks()
RUNNABLE = [b for b in BLOCKS if b.not_run is None]


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.where for b in RUNNABLE])
def test_every_unmarked_block_runs(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"model": fake_model(*["Noted!"] * 20), "__name__": "doc"}
    exec(compile(block.source, block.where, "exec"), namespace)


def test_blocks_that_do_not_run_say_why() -> None:
    assert RUNNABLE, "no runnable block found: the parser is broken"
    for block in BLOCKS:
        if block.not_run is not None:
            assert len(block.not_run) >= 10, f"{block.where}: give the reason it cannot run"


def test_the_marker_is_read_from_the_lines_above_the_fence(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```python\nprint(1)\n```\n\n"
        "<!-- not-run: needs a PostgreSQL server -->\n<!-- TODO(users): x -->\n"
        "```python\nprint(2)\n```\n\n<!-- a comment -->\n```python\nprint(3)\n```\n",
        encoding="utf-8",
    )
    first, second, third = blocks_of(page)
    assert (first.source, first.not_run) == ("print(1)\n", None)
    assert (second.source, second.not_run) == ("print(2)\n", "needs a PostgreSQL server")
    assert third.not_run is None


def test_the_readme_fits_on_a_few_screens_and_starts_with_users_and_threads() -> None:
    readme = ROOT / "README.md"
    assert len(readme.read_text("utf-8").splitlines()) <= 150
    first = blocks_of(readme)[0]
    assert "create_agent" in first.source and "PMMMiddleware" in first.source
    assert '"user_id": user_id' in first.source and '"thread_id": thread_id' in first.source


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pmm_docs_hook", ROOT / "docs/hooks/generated.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_page_is_generated_with_every_setting() -> None:
    import dataclasses

    from pmm.settings import Settings

    hook = _hook()
    table = hook.settings_table()
    for field in dataclasses.fields(Settings):
        assert f"`PMM_{field.name.upper()}`" in table
    page = hook.on_page_markdown("# Settings\n\n<!-- pmm:settings -->\n")
    assert "<!-- pmm:settings -->" not in page and "`PMM_DB_PATH` | `db_path` | `pmm.db`" in page


def test_the_cli_page_is_generated_with_every_command() -> None:
    from pmm.cli.parser import build_parser

    hook = _hook()
    text = hook.on_page_markdown("<!-- pmm:cli -->")
    commands = hook._subcommands(build_parser())
    assert len(commands) >= 20
    for name, sub in commands.items():
        assert f"## `pmm {name}`" in text
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help", "--db", "--json", "-v", "--verbose"):
                    assert f"`{option}" in text or f", {option}" in text, (name, option)


def test_the_readmes_links_into_the_repository_exist() -> None:
    import re

    for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md"):
        text = (ROOT / name).read_text("utf-8")
        targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
        local = [t for t in targets if "://" not in t]
        assert name != "README.md" or len(local) >= 20
        for target in local:
            assert (ROOT / target).exists(), f"{name} links to {target}, which does not exist"
