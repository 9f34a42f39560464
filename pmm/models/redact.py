"""Keep secrets out of messages: PMM puts the text of backend errors in its log and its
exceptions, and a server may echo the key it rejected ("Incorrect API key provided: ...");
a database URL may carry a password.

    redact_secrets("Incorrect API key provided: sk-live-abc123456789")
    # 'Incorrect API key provided: [redacted]'
    error_text(exc, chat_model)        # 'AuthenticationError: ... [redacted] ...'
    mask_url("postgresql://app:hunter2@db/pmm")   # 'postgresql://app:***@db/pmm'

Redacted: the values of the environment variables whose names end in ``_API_KEY``,
``_TOKEN``, ``_SECRET`` or ``_PASSWORD`` (``OPENAI_API_KEY`` ...), anything shaped like an
OpenAI-style key (``sk-`` followed by 8+ key characters), every value passed to
:func:`remember_secret` (the password of each database URL PMM opened, the keys of the
models it was handed: :func:`remember_secrets_of`), and the secret fields (pydantic
``SecretStr``, as LangChain's chat models and embeddings keep ``api_key``) of the objects
passed to :func:`error_text`.

Every place that logs or re-raises the text of a provider's or backend's exception goes
through :func:`error_text` (or :func:`redact_secrets` for a message built otherwise).
"""

from __future__ import annotations

import os
import re
import threading
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "REDACTED",
    "error_text",
    "mask_url",
    "redact_secrets",
    "remember_secret",
    "remember_secrets_of",
]

REDACTED = "[redacted]"
MASK = "***"
"""What stands for a password in a URL shown to a person (``user:***@host``)."""
_SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
_KEY_SHAPE = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
_MIN_SECRET = 4
"""Shorter values are not redacted: "abc" would mangle every message that holds it."""
_SECRET_PARAMS = frozenset({"password", "pass", "passwd", "sslpassword"})

_known: set[str] = set()
_known_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Redact ``value`` (and its URL-quoted form) from every message from now on in this
    process: a database password, an API key handed in code rather than the environment."""
    if not value or len(value) < _MIN_SECRET:
        return
    with _known_lock:
        _known.add(value)
        if quote(value, safe="") != value:
            _known.add(quote(value, safe=""))
        if unquote(value) != value and len(unquote(value)) >= _MIN_SECRET:
            _known.add(unquote(value))


def remember_secrets_of(*holders: object) -> None:
    """Remember the secret fields of ``holders`` (see :func:`secret_values`)."""
    for value in secret_values(*holders):
        remember_secret(value)


def secret_values(*holders: object) -> list[str]:
    """The values of the ``SecretStr``-like attributes (anything with
    ``get_secret_value()``) of ``holders`` and of the objects they hold, two levels down
    (a digester holding a chat model, a ``RunnableBinding`` holding one, an embedder
    wrapping LangChain embeddings)."""
    found: list[str] = []
    seen: set[int] = set()

    def visit(obj: object, depth: int) -> None:
        if obj is None or id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool)):
            return
        seen.add(id(obj))
        reveal = getattr(type(obj), "get_secret_value", None)
        if callable(reveal):
            value = reveal(obj)
            if isinstance(value, str):
                found.append(value)
            return
        if depth == 0:
            return
        try:
            fields = vars(obj)
        except TypeError:  # no __dict__ (slots, builtins): nothing held
            return
        for value in list(fields.values()):
            visit(value, depth - 1)

    for holder in holders:
        visit(holder, 3)
    return found


def redact_secrets(text: str, *extra: str) -> str:
    """``text`` with every secret (see the module docstring) and each of ``extra``
    replaced by ``[redacted]``."""
    with _known_lock:
        values = set(_known)
    values.update(e for e in extra if e and len(e) >= _MIN_SECRET)
    for name, value in os.environ.items():
        if len(value) >= 8 and name.upper().endswith(_SECRET_SUFFIXES):
            values.add(value)
    for value in sorted(values, key=len, reverse=True):  # a longer secret first
        if value in text:
            text = text.replace(value, REDACTED)
    return _KEY_SHAPE.sub(REDACTED, text)


def error_text(exc: BaseException, *holders: object) -> str:
    """``"TypeName: message"`` of ``exc``, redacted, with the secrets of ``holders`` (the
    chat model or embedder that raised it) redacted too: what a log line or a re-raised
    error may show of a provider's failure."""
    return redact_secrets(f"{type(exc).__name__}: {exc}", *secret_values(*holders))


def mask_url(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@`` or a ``password=`` parameter)
    replaced by ``***``, for messages, logs and reports; anything that is not such a URL
    (a file path) comes back unchanged. The password is remembered (:func:`remember_secret`)
    so that a driver's message that quotes it is redacted too."""
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a malformed URL: show nothing after the scheme's user part
        return url.split("://", 1)[0] + "://" + MASK
    netloc = parts.netloc
    if password is not None:
        remember_secret(password)
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(k.lower() in _SECRET_PARAMS for k, _ in pairs):
            for k, v in pairs:
                if k.lower() in _SECRET_PARAMS:
                    remember_secret(v)
            query = urlencode(
                [(k, MASK if k.lower() in _SECRET_PARAMS else v) for k, v in pairs], safe="*"
            )
    return urlunsplit(parts._replace(netloc=netloc, query=query))
