"""``pmm-chat`` (or ``python chat.py``): an interactive chat whose memory survives restarts.

    OPENAI_API_KEY=sk-... pmm-chat --session alice            # OpenAI
    OPENAI_API_KEY=x OPENAI_BASE_URL=http://localhost:11434/v1 pmm-chat --model llama3.2
    pmm-chat --db demo.db                                      # no key: offline mode
    pmm-chat --summaries --embeddings    # digests and vectors on (PMM_ENABLE_SUMMARY, ...)

With ``OPENAI_API_KEY`` (environment or ``.env``) each message goes through a LangChain v1
agent, ``create_agent(ChatOpenAI, middleware=[PMMMiddleware], checkpointer=InMemorySaver())``,
whose system message carries PMM's compact, budgeted context for the session (``--classic``
uses the LCEL chain ``ChatPromptTemplate(system, MessagesPlaceholder("history"), human) |
ChatOpenAI`` instead, with the context as history messages). ``OPENAI_BASE_URL`` points it at
any OpenAI-compatible server (Ollama, vLLM, llama.cpp). Without a key the chat runs OFFLINE
and answers from memory alone (key facts and the best recalled turns), so the memory can be
tried anywhere; the banner says so once, the replies do not repeat it. Either way every
exchange is saved as two chained events before the reply is shown: what you have seen
answered is in the log.

Commands: /help, /memory [TEXT], /stats, /verify, /search TEXT, /session NAME, /user NAME, /quit.

``--user alice`` (or ``/user alice``) makes the sessions Alice's threads: each keeps its own
recent turns, her key facts and memories come from all of her threads, and ``/search``
looks in hers alone, never in another user's.
Ctrl-D or Ctrl-C at the prompt leaves; Ctrl-C while a reply is coming cancels that turn.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pmm.chat.offline import OfflineResponder
from pmm.chat.online import Responder, online_responder
from pmm.chat.options import HELP, features, openai_env, parser
from pmm.chat.terminal import (
    PROMPT,
    PromptAwareHandler,
    enable_line_editing,
    interrupts_deferred,
)
from pmm.context.users import checked_user
from pmm.errors import InvalidInputError, PMMError
from pmm.models.redact import mask_url
from pmm.records import NewEvent
from pmm.settings import Settings
from pmm.text.words import found_by, snippet

if TYPE_CHECKING:
    from pmm.mind import Mind
    from pmm.records import Hit


REPLY_PREFIX = "pmm> "

Write = Callable[[str], None]


@dataclass
class Chat:
    """One chat: a Mind, the current session (a thread of ``user`` when one is set) and a
    responder. :meth:`handle` runs a line."""

    mind: Mind
    session: str
    responder: Responder
    write: Write = print
    user: str | None = None

    def handle(self, line: str) -> bool:
        """Run one line (a message or a /command); False when the chat should end."""
        text = line.strip()
        if not text:
            return True
        if text.startswith("/"):
            return self.command(text)
        try:
            answer = self.responder.reply(self.mind, self.session, text, self.user)
        except KeyboardInterrupt:
            self.write("\n(cancelled: that message was not saved)")
            return True
        except PMMError:
            raise
        except Exception as exc:  # the model or the network failed: tell, keep chatting
            self.write(
                f"(the model call failed: {type(exc).__name__}: {exc}; nothing was saved, "
                "try again)"
            )
            return True
        # Saved, then shown: a reply on screen is in the log. Ctrl-C cannot split the two.
        # A reply of another kind than "response" (offline mode's) is logged but is no
        # turn: it never fills the history, the context or recall.
        reply_kind = getattr(self.responder, "reply_kind", "response")
        with interrupts_deferred():
            if getattr(self.responder, "remembers", False):
                pass  # the agent's middleware stored the exchange, each message once
            elif reply_kind == "response":
                self.mind.remember_turn(text, answer, session_id=self.session, user_id=self.user)
            else:
                self.mind.remember_many(
                    [
                        NewEvent("prompt", text, self.session, "user", None),
                        NewEvent(reply_kind, answer, self.session, "assistant", None),
                    ],
                    user_id=self.user,
                )
            self.write(REPLY_PREFIX + answer)
        return True

    def command(self, text: str) -> bool:
        name, _, rest = text.partition(" ")
        rest = rest.strip()
        name = name.lower()
        if name in ("/quit", "/exit", "/q"):
            return False
        if name in ("/help", "/?"):
            self.write(HELP)
        elif name == "/memory":
            self.show_memory(rest or None)
        elif name == "/stats":
            self.show_stats()
        elif name == "/verify":
            self.show_verify()
        elif name == "/search":
            if not rest:
                self.write("usage: /search TEXT")
            else:
                self.show_search(rest)
        elif name == "/dream":
            self.dream()
        elif name == "/user":
            if not rest:
                who = "none: the whole log" if self.user is None else repr(self.user)
                self.write(f"user: {who} (switch with /user NAME [SESSION])")
            else:
                self.switch_user(*rest.split(maxsplit=1))
        elif name == "/session":
            if not rest:
                self.write(f"session: {self.session} (switch with /session NAME)")
            else:
                self.switch(rest)
        else:
            self.write(f"unknown command {name}: /help lists the commands")
        return True

    def dream(self, *, at_exit: bool = False) -> None:
        """Digest, embed and consolidate what is pending, with a progress line; at exit only
        when ``PMM_DREAM_ON_CLOSE`` is on and there is work ("learn fast, dream deep")."""
        settings = self.mind.settings
        if not (settings.enable_summary or settings.enable_embeddings):
            if not at_exit:
                self.write(
                    "(nothing to dream: summaries and embeddings are off, see PMM_ENABLE_SUMMARY)"
                )
            return
        if at_exit and not (settings.dream_on_close and self.mind.pending_count()):
            return

        def progress(done: int, total: int) -> None:
            self.write(f"dreaming: {done}/{total} turns digested")

        try:
            report = self.mind.dream(progress=progress)
        except KeyboardInterrupt:
            self.write("(dream interrupted: the pending turns stay pending, nothing is lost)")
            return
        self.write(
            f"dreamt in {report.seconds:.1f}s: {_count(report.digested, 'turn')} digested, "
            f"{report.embedded:,} embedded, session summaries written: {report.summaries:,}, "
            f"{_count(report.contradictions, 'contradiction')}"
        )

    def show_memory(self, query: str | None = None) -> None:
        """What the model would read: the context of this session, with the memories
        relevant to ``query`` (``/memory TEXT``: as if TEXT were the next message)."""
        context = self.mind.context(self.session, query=query, user_id=self.user)
        body = context.text()
        if not body:
            self.write(f"(nothing remembered in session {self.session!r} yet)")
            return
        self.write(
            f"memory of session {self.session!r} ({context.tokens} of "
            f"{context.budget_tokens} tokens):\n{body}"
        )

    def show_stats(self) -> None:
        from pmm.text.sizes import format_size

        if self.user is not None:
            mine = self.mind.stats(user_id=self.user)
            self.write(
                f"user {self.user!r}: {_count(mine['events'], 'event')} "
                f"({_count(mine['turns'], 'turn')}) in {_count(mine['sessions'], 'thread')}"
            )
        stats = self.mind.stats()
        size = int(stats["bytes_on_disk"])  # the same figure `pmm stats` shows
        sessions = stats["by_session"]
        here = self.mind.store.count(session_id=self.session)
        pending = (
            f"; {_count(stats['pending_digests'], 'turn')} wait for a digest"
            if self.mind.settings.enable_summary
            else ""
        )
        self.write(
            f"{_count(stats['events'], 'event')} ({_count(stats['turns'], 'turn')}: a turn "
            f"is one message) in {_count(len(sessions), 'session')}, {here:,} of the events "
            f"in {self.session!r}{pending}; {format_size(size)} ({size:,} bytes) in {stats['path']}"
        )

    def show_verify(self) -> None:
        report = self.mind.verify()
        if report.ok:
            self.write(
                f"chain OK: {report.rows:,} rows verified; head id {report.head_id}, "
                f"hash {report.head}; root over {len(report.heads)} chains {report.root}"
            )
        else:
            self.write(f"chain FAILED at event {report.first_bad_id}: {report.reason}")

    def show_search(self, query: str) -> None:
        hits = _recall(self.mind, query, k=5, session=None, user=self.user)
        if not hits:
            self.write(f"nothing found for {query!r}")
            return
        for hit in hits:
            event = hit.event
            text = event.content if event.content is not None else "(redacted)"
            self.write(
                f"#{event.id} [{event.session_id}] {event.role or event.kind}: "
                f"{snippet(text, 90)}  ({found_by(hit.rankers)})"
            )

    def switch(self, name: str) -> None:
        try:  # validates the name, and that the session is not another user's
            turns = len(self.mind.history(name, user_id=self.user))
        except InvalidInputError as exc:
            self.write(f"(not switched: {exc})")
            return
        self.session = name
        self.write(f"switched to session {name!r} ({turns} turns remembered)")

    def switch_user(self, user: str, session: str | None = None) -> None:
        """Act as ``user`` from now on, in her thread ``session``. Without one: the current
        session when it is new or hers, else her thread named after her (``alice``, or
        ``alice-2``, ... when that name is taken by someone else), so that the next lines
        are hers and never added to an anonymous or another user's thread."""
        if session is not None:
            try:
                turns = len(self.mind.history(session, user_id=user))
            except InvalidInputError as exc:
                self.write(f"(not switched: {exc}; name one of her threads: /user NAME SESSION)")
                return
            self.user, self.session = user, session
            self.write(f"user {user!r}, session {session!r} ({turns} turns remembered)")
            return
        try:
            checked_user(user)
        except InvalidInputError as exc:
            self.write(f"(not switched: {exc})")
            return
        previous = self.session
        for target in [previous, user, *(f"{user}-{n}" for n in range(2, 100))]:
            try:  # refused when the thread is anonymous with turns, or another user's
                turns = len(self.mind.history(target, user_id=user))
            except InvalidInputError:
                continue
            self.user, self.session = user, target
            moved = "" if target == previous else f"; {previous!r} is not hers: her own thread"
            self.write(f"user {user!r}, session {target!r} ({turns} turns remembered{moved})")
            return
        self.write(f"(not switched: no free thread name for {user!r}: /user {user} SESSION)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chat until /quit, Ctrl-D or Ctrl-C; returns the exit code."""
    args = parser().parse_args(argv)
    log_handler = PromptAwareHandler()
    log_handler.setFormatter(logging.Formatter("pmm: %(levelname)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[log_handler])
    try:
        settings = Settings.load(
            db_path=args.db,
            session_id=args.session,
            enable_summary=args.summaries,
            enable_embeddings=args.embeddings,
        )
        user = checked_user(args.user)
        api_key, base_url = openai_env()
        responder: Responder
        if api_key:
            responder = online_responder(
                args.model or settings.llm_model, api_key, base_url, classic=args.classic
            )
        else:
            responder = OfflineResponder()
        from pmm.mind import Mind

        mind = Mind(settings=settings)
    except PMMError as exc:
        print(f"pmm-chat: error: {exc}", file=sys.stderr)
        return 2
    try:
        print(
            f"PMM chat - {responder.banner} - session {settings.session_id!r}, "
            f"memory in {mask_url(settings.db_url or settings.db_path)} ({features(settings)})"
        )
        print("Type a message, or /help for commands; Ctrl-D leaves.")
        enable_line_editing()
        chat = Chat(mind, settings.session_id, responder, user=user)
        if user is not None:
            mind.history(settings.session_id, user_id=user)  # refuses another user's thread
        code = _loop(chat, log_handler)
        chat.dream(at_exit=True)
        return code
    finally:
        mind.close()


def _loop(chat: Chat, log_handler: PromptAwareHandler | None = None) -> int:
    while True:
        try:
            if log_handler is not None:
                log_handler.at_prompt = True
            try:
                line = input(PROMPT)
            finally:
                if log_handler is not None:
                    log_handler.at_prompt = False
        except (EOFError, KeyboardInterrupt):
            print("\nGoodbye.")
            return 0
        try:
            if not chat.handle(line):
                print("Goodbye.")
                return 0
        except KeyboardInterrupt:
            print("\n(interrupted)")
        except PMMError as exc:
            print(f"error: {exc}")


# -- helpers -------------------------------------------------------------------------


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _recall(
    mind: Mind, query: str, *, k: int, session: str | None, user: str | None = None
) -> list[Hit]:
    return mind.recall(query, k, session_id=session, user_id=user)
