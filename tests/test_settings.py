"""Settings: .env.example stays in step with the fields; argument > environment > .env >
default; bad values raise ConfigurationError naming the variable."""

from __future__ import annotations

import ast
import os
from dataclasses import fields
from pathlib import Path

import pytest
from dotenv import dotenv_values

from pmm.errors import ConfigurationError, PMMError
from pmm.settings import Settings

ENV_EXAMPLE = Path(__file__).resolve().parent.parent / ".env.example"
SETTINGS_SOURCE = Path(__file__).resolve().parent.parent / "pmm" / "settings.py"


def field_docs() -> dict[str, str]:
    """Each Settings field's docstring (the string literal under it), read from the source."""
    tree = ast.parse(SETTINGS_SOURCE.read_text("utf-8"))
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings"]
    docs: dict[str, str] = {}
    for node, after in zip(cls.body, cls.body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = after.value.value
    return docs


def variable(name: str) -> str:
    return "PMM_" + name.upper()


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No PMM_* variables from the machine; the working folder is empty (no .env)."""
    for name in list(os.environ):
        if name.startswith("PMM_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


# -- .env.example ----------------------------------------------------------------------


def test_env_example_lists_exactly_the_settings() -> None:
    values = dotenv_values(ENV_EXAMPLE)
    assert set(values) == {variable(f.name) for f in fields(Settings)}
    text = ENV_EXAMPLE.read_text("utf-8")
    assert "\n# OPENAI_API_KEY=" in text and "\n# OPENAI_BASE_URL=" in text


def test_env_example_shows_the_defaults() -> None:
    values = {k: v or "" for k, v in dotenv_values(ENV_EXAMPLE).items()}
    assert Settings.load(env=values) == Settings()


def test_env_example_describes_every_variable() -> None:
    docs = field_docs()
    assert set(docs) == {f.name for f in fields(Settings)}
    lines = ENV_EXAMPLE.read_text("utf-8").splitlines()
    for name, doc in docs.items():
        [index] = [i for i, line in enumerate(lines) if line.startswith(variable(name) + "=")]
        assert lines[index - 1] == f"# {doc}", name


# -- precedence ------------------------------------------------------------------------


def write_dotenv(folder: Path, **values: str) -> None:
    text = "".join(f"{variable(k)}={v}\n" for k, v in values.items())
    (folder / ".env").write_text(text, "utf-8")


def test_defaults_without_environment_or_dotenv() -> None:
    assert Settings.load() == Settings()
    assert Settings.load().db_path == "pmm.db"


def test_argument_beats_environment_beats_dotenv_beats_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_dotenv(tmp_path, max_tokens="111", session_id="from-dotenv", recall_k="7")
    monkeypatch.setenv("PMM_MAX_TOKENS", "222")
    monkeypatch.setenv("PMM_SESSION_ID", "from-env")

    settings = Settings.load(max_tokens=333)
    assert settings.max_tokens == 333  # argument
    assert settings.session_id == "from-env"  # environment over .env
    assert settings.recall_k == 7  # .env over default
    assert settings.raw_turns == Settings().raw_turns  # default

    assert Settings.load().max_tokens == 222
    monkeypatch.delenv("PMM_MAX_TOKENS")
    assert Settings.load().max_tokens == 111
    assert Settings.load(max_tokens=None).max_tokens == 111  # None = not given


def test_dotenv_is_found_from_a_subfolder_and_not_exported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_dotenv(tmp_path, enable_summary="yes", summary_mode="deferred")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    settings = Settings.load()
    assert settings.enable_summary is True and settings.summary_mode == "deferred"
    assert "PMM_ENABLE_SUMMARY" not in os.environ


def test_openai_key_in_dotenv_reaches_the_environment_unless_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text(
        "OPENAI_API_KEY=from-dotenv\nOPENAI_BASE_URL=http://127.0.0.1:9/v1\n", "utf-8"
    )
    monkeypatch.chdir(tmp_path)
    # setenv first so that monkeypatch restores the variable Settings.load sets (a bare
    # delenv of an unset name records nothing, and the key leaked into later tests)
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://kept/v1")
    Settings.load()
    assert os.environ["OPENAI_API_KEY"] == "from-dotenv"
    assert os.environ["OPENAI_BASE_URL"] == "http://kept/v1"  # the environment wins


def test_explicit_env_ignores_os_environ_and_dotenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_dotenv(tmp_path, max_tokens="111")
    monkeypatch.setenv("PMM_RAW_TURNS", "9")
    settings = Settings.load(env={"PMM_SUMMARIZER": "heuristic"})
    assert settings.summarizer == "heuristic"
    assert (settings.max_tokens, settings.raw_turns) == (Settings().max_tokens, 4)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        *[("1", True), ("TRUE", True), ("yes", True), (" on ", True)],
        *[("0", False), ("false", False), ("No", False), ("off", False), ("", False)],
    ],
)
def test_boolean_spellings(raw: str, expected: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMM_ENABLE_EMBEDDINGS", raw)
    assert Settings.load().enable_embeddings is expected


def test_values_are_coerced_to_the_field_types(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMM_FLUSH_TIMEOUT", "2.5")
    monkeypatch.setenv("PMM_SUMMARY_BATCH_SIZE", "4")
    monkeypatch.setenv("PMM_RECALL_SCOPE", " all ")
    settings = Settings.load()
    assert settings.flush_timeout == 2.5 and settings.summary_batch_size == 4
    assert settings.recall_scope == "all"


# -- bad values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "why"),
    [
        ("PMM_MAX_TOKENS", "lots", "invalid literal"),
        ("PMM_RECALL_K", "-1", "must not be negative"),
        ("PMM_FLUSH_TIMEOUT", "soon", "could not convert"),
        ("PMM_ENABLE_SUMMARY", "maybe", "expected true or false"),
        ("PMM_SUMMARY_MODE", "sometimes", "expected one of inline, background, deferred"),
        ("PMM_SUMMARIZER", "gpt", "expected one of auto, llm, local, heuristic"),
        ("PMM_DEVICE", "tpu", "expected one of auto, cpu, cuda, mps"),
    ],
)
def test_bad_environment_values_raise(
    name: str, raw: str, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, raw)
    with pytest.raises(ConfigurationError) as info:
        Settings.load()
    message = str(info.value)
    assert message.startswith(f"{name}={raw!r} is not valid")
    assert why in message
    assert isinstance(info.value, PMMError) and isinstance(info.value, ValueError)


def test_bad_dotenv_value_raises(tmp_path: Path) -> None:
    write_dotenv(tmp_path, raw_turns="four")
    with pytest.raises(ConfigurationError, match="PMM_RAW_TURNS='four' is not valid"):
        Settings.load()


def test_bad_arguments_raise() -> None:
    with pytest.raises(ConfigurationError, match="summary_mode='never' is not valid"):
        Settings.load(summary_mode="never")
    with pytest.raises(ConfigurationError, match=r"unknown PMM setting.*enable_sumary"):
        Settings.load(enable_sumary=True)
    with pytest.raises(ConfigurationError, match="max_tokens='x' is not valid"):
        Settings().with_(max_tokens="x")
    assert Settings().with_(max_tokens="12").max_tokens == 12


# -- .env paths and unknown variables ----------------------------------------------------


def test_relative_db_path_in_dotenv_resolves_against_the_dotenv_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_dotenv(tmp_path, db_path="data/pmm.db")
    sub = tmp_path / "src" / "deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert Path(Settings.load().db_path) == tmp_path.resolve() / "data" / "pmm.db"
    monkeypatch.chdir(tmp_path)
    assert Path(Settings.load().db_path) == tmp_path.resolve() / "data" / "pmm.db"


def test_db_path_from_environment_or_argument_stays_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_dotenv(tmp_path, db_path="data/pmm.db")
    assert Settings.load(db_path="mine.db").db_path == "mine.db"
    monkeypatch.setenv("PMM_DB_PATH", "env.db")  # relative to the cwd, as shells expect
    assert Settings.load().db_path == "env.db"
    write_dotenv(tmp_path, db_path=":memory:")
    monkeypatch.delenv("PMM_DB_PATH")
    assert Settings.load().db_path == ":memory:"


def test_unknown_variable_warns_once_naming_the_closest_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import pmm.settings as settings_module

    monkeypatch.setattr(settings_module, "_warned_unknown", set())
    monkeypatch.setenv("PMM_ENABLE_SUMARY", "1")
    (tmp_path / ".env").write_text("PMM_MAX_TOKEN=10\nPMM_WHATEVER_ELSE=1\n", "utf-8")
    with caplog.at_level("WARNING", logger="pmm"):
        Settings.load()
        Settings.load()
    messages = [r.getMessage() for r in caplog.records]
    assert (
        messages.count(
            "PMM_ENABLE_SUMARY is not a PMM setting and is ignored; "
            "did you mean PMM_ENABLE_SUMMARY?"
        )
        == 1
    )
    assert any(m.startswith("PMM_MAX_TOKEN ") and "PMM_MAX_TOKENS?" in m for m in messages)
    assert any(m.startswith("PMM_WHATEVER_ELSE ") and ".env.example" in m for m in messages)
    assert len(messages) == 3


def test_a_database_url_in_dotenv_is_not_made_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql://app@db.internal/pmm"
    write_dotenv(tmp_path, db_path=url)
    monkeypatch.chdir(tmp_path)
    assert Settings.load().db_path == url
