"""The documentation renders offline: mermaid.js is vendored (mkdocs-material fetches it from
a CDN only when no global ``mermaid`` exists), and the API pages show Sphinx roles as code
or links, never a raw ``:class:``."""

from __future__ import annotations

import importlib.util
import re
import sys
from types import ModuleType

import yaml
from snippet_helpers import ROOT


class _Loader(yaml.SafeLoader):
    """mkdocs.yml's ``!!python/name:`` tags, read as plain strings."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: suffix)


def _config() -> dict[str, object]:
    return dict(yaml.load((ROOT / "mkdocs.yml").read_text("utf-8"), Loader=_Loader))


def test_mermaid_is_vendored_and_loaded_before_material_looks_for_it() -> None:
    scripts = _config()["extra_javascript"]
    assert isinstance(scripts, list) and "javascripts/mermaid.min.js" in scripts
    assert not [s for s in scripts if re.match(r"https?://", str(s))]
    vendored = (ROOT / "docs" / "javascripts" / "mermaid.min.js").read_text("utf-8")
    assert vendored.rstrip().endswith(
        'globalThis["mermaid"] = globalThis.__esbuild_esm_mermaid_nm["mermaid"].default;'
    )
    assert (ROOT / "docs" / "javascripts" / "mermaid-LICENSE.txt").is_file()


def test_no_page_loads_anything_from_the_network() -> None:
    for page in (ROOT / "docs").rglob("*.md"):
        text = page.read_text("utf-8")
        assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"https?://", text), page


def _hook() -> ModuleType:
    path = ROOT / "docs" / "hooks" / "sphinx_roles.py"
    spec = importlib.util.spec_from_file_location("pmm_sphinx_roles", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_sphinx_roles_render_as_code_or_optional_references() -> None:
    hook = _hook()
    assert _config()["hooks"] == ["docs/hooks/generated.py", "docs/hooks/sphinx_roles.py"]
    html = (
        "<p>See :class:<code>~pmm.mind.Mind</code>, "
        ":func:<code>pmm.cli.parser.build_parser()</code> and "
        ":meth:<code>remember</code> or :py:attr:<code>x &lt; y</code>.</p>"
    )
    out = hook.render_roles(html)
    assert ":class:" not in out and ":func:" not in out and ":meth:" not in out
    assert '<autoref identifier="pmm.mind.Mind" optional><code>Mind</code></autoref>' in out
    assert (
        '<autoref identifier="pmm.cli.parser.build_parser" optional>'
        "<code>pmm.cli.parser.build_parser()</code></autoref>"
    ) in out
    assert "<code>remember</code>" in out and "<code>x &lt; y</code>" in out
