"""Driving the chat REPL (``python chat.py``) as a real program through a pseudo-terminal,
shared by the REPL tests and the agent-chat tests."""

from __future__ import annotations

import io
import os
import signal
import sys
from pathlib import Path

import pexpect
from fake_openai import FakeOpenAI

from pmm.storage.sqlite import EventStore

CHAT = Path(__file__).resolve().parents[1] / "chat.py"
PROMPT = "you> "
ZED = "Hi, my name is Zed and I live in Oslo"


def interruptible() -> None:
    """In the child, before chat.py starts: Ctrl-C raises SIGINT's default handling again.
    A test run started in the background (``pytest &``, a CI job) ignores SIGINT, and a
    program inherits that: its Ctrl-C tests would wait for a Ctrl-C that never comes."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Chat:
    """``python chat.py ...`` in a pty, with everything it printed kept in :attr:`log`."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PMM_", "OPENAI_"))}
        full_env.update({"TERM": "dumb", "PYTHONUNBUFFERED": "1", **(env or {})})
        self.log = io.StringIO()
        self.child = pexpect.spawn(
            sys.executable,
            [str(CHAT), *args],
            cwd=str(cwd),
            env=full_env,
            encoding="utf-8",
            timeout=90,
            dimensions=(40, 200),
            preexec_fn=interruptible,
        )
        self.child.logfile_read = self.log
        self.child.expect("\r\n")
        self.first_line = self.child.before
        self.child.expect_exact(PROMPT)

    def say(self, line: str) -> str:
        """Send one line; returns what the program printed before its next prompt."""
        self.child.sendline(line)
        self.child.expect_exact(PROMPT)
        out = self.child.before
        assert isinstance(out, str)
        echo, _, rest = out.partition("\r\n")  # the terminal echoes the line typed
        assert echo.strip() == line
        return rest.replace("\r\n", "\n")

    def finish(self) -> str:
        """Wait for the program to end; returns its last output. It must exit 0."""
        self.child.expect(pexpect.EOF)
        tail = self.child.before
        self.child.close()
        assert self.child.exitstatus == 0, self.log.getvalue()
        assert "Traceback" not in self.log.getvalue()
        return str(tail)


def turns(db: Path, session: str) -> list[tuple[str | None, str | None]]:
    with EventStore(db) as store:
        assert store.verify().ok
        return [(e.role, e.content) for e in store.events(session_id=session)]


def chat_requests(server: FakeOpenAI) -> list[dict[str, object]]:
    return [r.body for r in server.requests if r.path.endswith("/chat/completions")]
