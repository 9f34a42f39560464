"""The chat's terminal: log lines that do not break the prompt, line editing, and Ctrl-C
held back while an exchange is being saved.

    handler = PromptAwareHandler()
    handler.at_prompt = True          # a warning now starts on its own line, prompt redrawn
    with interrupts_deferred():
        save_the_exchange()           # Ctrl-C here is ignored: the block completes
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

PROMPT = "you> "


class PromptAwareHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Log records on their own line: while the prompt waits for input (``at_prompt``), a
    warning from the background worker starts on a fresh line and the prompt, with what
    was typed so far, is drawn again below it, instead of landing inside the prompt line.
    """

    def __init__(self, stream: IO[str] | None = None, prompt_stream: IO[str] | None = None):
        super().__init__(stream if stream is not None else sys.stderr)
        self.prompt_stream = prompt_stream
        self.at_prompt = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.at_prompt:
            super().emit(record)
            return
        try:
            message = self.format(record)
            prompt_stream = self.prompt_stream or sys.stdout
            prompt_stream.flush()
            self.stream.write("\n" + message + "\n")
            self.flush()
            prompt_stream.write(PROMPT + typed_so_far())
            prompt_stream.flush()
        except Exception:  # logging's own policy: report through handleError, never raise
            self.handleError(record)


def typed_so_far() -> str:
    try:
        import readline
    except ImportError:
        return ""
    return readline.get_line_buffer()


def enable_line_editing() -> None:
    """Arrow keys and history through readline, where Python has it."""
    try:
        import readline
    except ImportError:  # e.g. Windows without pyreadline: plain input() still works
        return
    readline.parse_and_bind("set enable-bracketed-paste off")


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Ctrl-C inside the block is held back and ignored: the block always completes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
