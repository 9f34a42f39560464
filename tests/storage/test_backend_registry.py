"""A backend outside PMM opens through the same door as PMM's own: ``register_backend`` or
an installed entry point in the ``pmm.backends`` group, then ``Mind``, ``PMMStore`` and the
``pmm`` command take its URL. A ``scheme://`` no backend knows is refused, never taken
for a file name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pmm.storage as storage
from pmm import Mind
from pmm.cli import main
from pmm.errors import InvalidInputError
from pmm.integrations.langgraph import PMMStore
from pmm.storage import open_store, register_backend
from pmm.storage.sqlite import EventStore

OPENED: list[tuple[str, dict[str, Any]]] = []


class FolderStore(EventStore):
    """A stand-in third-party backend: ``folder://PATH`` keeps its log in PATH/log.db."""

    def __init__(self, target: str, **options: Any) -> None:
        OPENED.append((target, options))
        folder = Path(target.removeprefix("folder://"))
        folder.mkdir(parents=True, exist_ok=True)
        super().__init__(folder / "log.db", **options)


@pytest.fixture
def registered() -> Iterator[None]:
    saved = dict(storage._openers)
    OPENED.clear()
    register_backend("folder://", FolderStore)
    yield
    storage._openers.clear()
    storage._openers.update(saved)


def test_mind_and_the_langgraph_store_open_a_registered_backend(
    tmp_path: Path, registered: None
) -> None:
    url = f"folder://{tmp_path / 'memory'}"
    with Mind(db_path=url) as mind:
        assert isinstance(mind.store, FolderStore)
        mind.remember("I moved to Lisbon", session_id="t1", role="user", user_id="alice")
    store = PMMStore(url)
    try:
        assert isinstance(store.mind.store, FolderStore)
        assert store.mind.store.count(user_id="alice") == 1
    finally:
        store.close()
    assert (tmp_path / "memory" / "log.db").is_file()
    target, options = OPENED[0]
    assert target == url and {"max_content_bytes", "window_radius"} <= set(options)


def test_the_pmm_command_takes_a_registered_url(
    tmp_path: Path, registered: None, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"folder://{tmp_path / 'cli'}"
    with Mind(db_path=url) as mind:
        mind.remember("hello", session_id="t1", role="user")
    assert main(["verify", "--db", url]) == 0
    assert "OK" in capsys.readouterr().out.upper()


def test_an_unknown_scheme_is_refused_saying_how_to_register(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"register_backend\('nosuch://'"):
        open_store("nosuch://anything")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("scheme", ["folder", "postgresql://", "://"])
def test_a_bad_or_taken_scheme_is_refused(scheme: str) -> None:
    with pytest.raises(InvalidInputError):
        register_backend(scheme, FolderStore)


def test_an_installed_entry_point_is_loaded_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "entry_backend-1.0.dist-info").mkdir(parents=True)
    (site / "entry_backend-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: entry-backend\nVersion: 1.0\n", "utf-8"
    )
    (site / "entry_backend-1.0.dist-info" / "entry_points.txt").write_text(
        "[pmm.backends]\nentrystore = entry_backend:open_log\n", "utf-8"
    )
    (site / "entry_backend.py").write_text(
        "from pmm.storage.sqlite import EventStore\n"
        "def open_log(target, **options):\n"
        "    return EventStore(target.removeprefix('entrystore://'), **options)\n",
        "utf-8",
    )
    monkeypatch.syspath_prepend(str(site))
    saved = dict(storage._openers)
    try:
        with open_store(f"entrystore://{tmp_path / 'e.db'}") as log:
            log.append("note", "from an entry point")
        assert (tmp_path / "e.db").is_file()
        assert "entrystore://" in storage._openers
    finally:
        storage._openers.clear()
        storage._openers.update(saved)
