"""What ``pmm-chat`` reads before it starts: its command line (``--db``, ``--session``,
``--user``, ``--model``, ``--classic``, ``--summaries``, ``--embeddings``), the OpenAI
variables, and the one-line summary of the features on for the banner.

    args = parser().parse_args(["--db", "demo.db", "--summaries"])
    api_key, base_url = openai_env()     # from the environment (or .env, once loaded)
    features(Settings.load())            # "summaries off, embeddings off"
"""

from __future__ import annotations

import argparse
import os

from pmm.settings import Settings

HELP = """\
commands:
  /help           this list
  /memory [TEXT]  the memory the model sees (with the memories relevant to TEXT)
  /stats          what the event log holds
  /verify         check the log's hash chain
  /search TEXT    recall the events most relevant to TEXT (all of the user's threads;
                  every session when no user is set)
  /dream          digest, embed and consolidate what is pending now (also done at exit)
  /session NAME   switch to another conversation
  /user NAME [S]  act as user NAME: her thread S, else this one when new or hers, else
                  her own thread named after her (never an anonymous one)
  /quit           leave (Ctrl-D and Ctrl-C at the prompt leave too)
anything else is a message."""


def parser() -> argparse.ArgumentParser:
    """The command line of ``pmm-chat`` (its ``--help`` lists :data:`HELP`'s commands)."""
    found = argparse.ArgumentParser(
        prog="pmm-chat",
        description="Chat with persistent memory (PMM). Uses OPENAI_API_KEY and "
        "OPENAI_BASE_URL (environment or .env) when set; otherwise runs offline and "
        "answers from memory.",
        epilog=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    found.add_argument("--db", help="the event log (default: PMM_DB_PATH, else pmm.db)")
    found.add_argument(
        "--session", help="the conversation to continue (default: PMM_SESSION_ID, else default)"
    )
    found.add_argument(
        "--user",
        help="the user whose threads these are (memory spans her threads, never another "
        "user's; default: none, the whole log)",
    )
    found.add_argument("--model", help="chat model name (default: PMM_LLM_MODEL)")
    found.add_argument(
        "--classic",
        action="store_true",
        help="online: use the classic LCEL chain instead of the LangChain v1 agent",
    )
    found.add_argument(
        "--summaries",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="digest every turn into a summary and keywords (default: PMM_ENABLE_SUMMARY)",
    )
    found.add_argument(
        "--embeddings",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="embed turns for semantic recall; needs the [embeddings] extra "
        "(default: PMM_ENABLE_EMBEDDINGS)",
    )
    return found


def features(settings: Settings) -> str:
    """``summaries on (auto, background), embeddings off`` for the banner."""
    summaries = (
        f"summaries on ({settings.summarizer}, {settings.summary_mode})"
        if settings.enable_summary
        else "summaries off"
    )
    return f"{summaries}, embeddings {'on' if settings.enable_embeddings else 'off'}"


def openai_env() -> tuple[str | None, str | None]:
    """``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (``Settings.load`` has already copied them
    from ``.env`` into the environment when they were only there)."""

    def get(name: str) -> str | None:
        value = os.environ.get(name, "").strip()
        return value or None

    return get("OPENAI_API_KEY"), get("OPENAI_BASE_URL")
