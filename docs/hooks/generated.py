"""MkDocs hook: pages that say ``<!-- pmm:settings -->`` or ``<!-- pmm:cli -->`` get the
table of every setting (from :class:`pmm.settings.Settings`) or every command (from
:func:`pmm.cli.parser.build_parser`) in their place, built from the code at build time,
so the reference cannot drift from it; ``<!-- pmm:figures -->`` gets the headline figures
that scripts/figures.py reads from the benches' JSON (the README's table is the same).

    mkdocs build --strict          # runs this hook on every page

The same functions are imported by ``tests/docs/test_generated_reference.py``.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SETTINGS_MARKER = "<!-- pmm:settings -->"
CLI_MARKER = "<!-- pmm:cli -->"
FIGURES_MARKER = "<!-- pmm:figures -->"


def _text(text: str) -> str:
    """Plain text for Markdown: ``<name>`` would be read as an HTML tag."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cell(text: str) -> str:
    return _text(" ".join(text.split())).replace("|", "\\|")


def setting_docs() -> dict[str, str]:
    """Each ``Settings`` field's attribute docstring, read from the source of pmm/settings.py."""
    tree = ast.parse((ROOT / "pmm" / "settings.py").read_text("utf-8"))
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings"]
    docs: dict[str, str] = {}
    body = cls.body
    for node, after in zip(body, [*body[1:], None], strict=True):
        documented = (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        )
        if documented and isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            assert isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            docs[node.target.id] = str(after.value.value)
    return docs


def settings_table() -> str:
    """Markdown table: variable, keyword argument, default, what it does."""
    from pmm.settings import Settings

    docs = setting_docs()
    rows = [
        "| variable | keyword argument | default | what it does |",
        "|---|---|---|---|",
    ]
    for field in dataclasses.fields(Settings):
        default = field.default
        shown = "(empty)" if default == "" else repr(default).strip("'")
        doc = docs.get(field.name)
        if doc is None:
            raise ValueError(f"Settings.{field.name} has no docstring")
        rows.append(f"| `PMM_{field.name.upper()}` | `{field.name}` | `{shown}` | {_cell(doc)} |")
    return "\n".join(rows)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _argument(action: argparse.Action) -> str:
    if action.option_strings:
        name = ", ".join(action.option_strings)
        if action.nargs != 0:
            choices = "{" + ",".join(map(str, action.choices or ())) + "}"
            metavar = action.metavar or (choices if action.choices else action.dest.upper())
            name += f" {metavar}"
    else:
        name = str(action.metavar or action.dest)
    return f"`{name}`"


def _arguments_table(parser: argparse.ArgumentParser, skip: set[str]) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if set(action.option_strings) & skip:
            continue
        default = action.default
        extra = ""
        shown = f"({default})"
        if default not in (None, False, argparse.SUPPRESS) and action.nargs != 0:
            extra = "" if shown in str(action.help or "") else f" (default `{default}`)"
        rows.append(f"| {_argument(action)} | {_cell(str(action.help or ''))}{extra} |")
    if not rows:
        return []
    return ["| argument | meaning |", "|---|---|", *rows]


def cli_reference() -> str:
    """Markdown: the common options, then one section per ``pmm`` command."""
    from pmm.cli.parser import build_parser

    parser = build_parser()
    out = ["## Options every command takes", ""]
    out += _arguments_table(parser, skip={"--version"})
    common = {s for a in parser._actions for s in a.option_strings}
    for name, sub in _subcommands(parser).items():
        out += ["", f"## `pmm {name}`", ""]
        description = sub.description or ""
        out += [_text(line.strip()) for line in description.splitlines()]
        table = _arguments_table(sub, skip=common)
        if table:
            out += ["", *table]
    return "\n".join(out)


def figures_table() -> str:
    """The headline figures table of scripts/figures.py, with links relative to
    docs/benchmarks/ (the index is the only page that shows it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pmm_figures", ROOT / "scripts" / "figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return str(module.table(""))


def on_page_markdown(markdown: str, **_: Any) -> str:
    if SETTINGS_MARKER in markdown:
        markdown = markdown.replace(SETTINGS_MARKER, settings_table())
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if FIGURES_MARKER in markdown:
        markdown = markdown.replace(FIGURES_MARKER, figures_table())
    return markdown
