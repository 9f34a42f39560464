"""What a context is made of and how it reads: turns, the sections, and their rendering.

    ctx = Context(session_id="alice", budget_tokens=500, tokens=42, counter="tiktoken",
                  facts=["Name: Ana"], history=[Turn("user", "Hi", 7)])
    ctx.text()       # "Key information:\\n- Name: Ana\\n\\nRecent conversation:\\nHuman: Hi"
    ctx.messages()   # [SystemMessage("Key information: ..."), HumanMessage("Hi")]

The sections, in the order a model reads them: what holds for the user (key facts), what
happened earlier (the rolling summary of this thread, then the relevant memories, oldest
first), and last the recent conversation, which leads into the model's reply. Stable facts
first and the live exchange last is the order a person briefs someone in; memories in date
order let the model read them as a story and answer "when" and "what happened after"
questions from the dates it sees.

Memories are grouped under a header per day and thread, ``[2023-05-08, thread 2]``, so a
date costs its tokens once per group rather than once per line. Threads are labelled by
number in the order they first appear (the current one is "this thread"): a label costs two
or three tokens whatever the thread id is (ids can be 5,000 characters or an e-mail
address, and need not reach the prompt). When every memory is of the current thread, the
headers show the day alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from pmm.context.tokens import TokenCounter

MESSAGE_OVERHEAD = 4
"""Tokens a chat API adds per message (role and separators), counted in messages mode."""

FACTS_HEADER = "Key information:"
SUMMARY_HEADER = "Earlier in this conversation:"
MEMORIES_HEADER = "Relevant memories:"
HISTORY_HEADER = "Recent conversation:"
THIS_THREAD = "this thread"


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn as shown to the model: who said it and the text shown.

    ``text`` is what the model reads: the raw text, its summary (``summarized``) or, for a
    memory, the excerpt that bears on the question (``excerpt``: it holds ``…`` where text
    was left out). ``alt`` is a shorter stand-in the assembly may show instead (a turn's
    digest, with summaries on)."""

    role: str
    text: str
    event_id: int
    ts: str = ""
    session_id: str | None = None
    summarized: bool = False
    alt: str = ""
    excerpt: bool = False


_Rendering = tuple[tuple[object, ...], list[list[str]], list[str], dict[object, int]]
"""What :meth:`Context._held` keeps: what it rendered from, the head's sections, the
turns' lines, and the costs counted of them (:meth:`Context.cost`)."""


@dataclass(frozen=True, slots=True)
class Context:
    """The assembled memory of one session, ready to render.

    ``history`` is oldest first; ``memories`` in the order they are shown (by date).
    ``tokens`` is what the rendering costs by ``counter``'s count (in messages mode: each
    message plus :data:`MESSAGE_OVERHEAD`), never more than ``budget_tokens``.
    """

    session_id: str
    budget_tokens: int
    tokens: int
    counter: str
    facts: list[str] = field(default_factory=list)
    memories: list[Turn] = field(default_factory=list)
    history: list[Turn] = field(default_factory=list)
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    as_messages: bool = False
    summary: list[str] = field(default_factory=list)
    """Bullets of the stored session summary standing for turns that are not shown."""
    _rendered: list[_Rendering] = field(default_factory=list, init=False, repr=False, compare=False)
    """The lines last rendered and what they were rendered from (:meth:`_held`)."""

    def __str__(self) -> str:
        """:meth:`text`: ``print(mind.context("alice"))`` shows what the model reads."""
        return self.text()

    def head(self) -> list[str]:
        """The sections above the recent turns (facts, summary, memories), each a block."""
        return ["\n".join(block) for block in self._lines()[0]]

    def head_lines(self) -> list[list[str]]:
        """:meth:`head`'s sections, each as its lines (its header first)."""
        return [list(block) for block in self._lines()[0]]

    def blocks(self) -> list[list[str]]:
        """:meth:`text` as blocks of lines: the head's sections, then the recent turns
        (under their header when a section is above them); none when all are empty."""
        head, lines = self._lines()
        if not head:
            return [list(lines)] if lines else []
        blocks = [list(block) for block in head]
        if lines:
            blocks.append([HISTORY_HEADER, *lines])
        return blocks

    def reuse_rendering(self, other: Context) -> None:
        """Take ``other``'s rendered lines (and their costs), used while this context's
        parts equal what they were rendered from (the assembly renders and counts each
        step's context)."""
        self._rendered[:] = other._rendered[-1:]

    def cost(self, counter: TokenCounter) -> int:
        """What the context costs as the model receives it: its text, or (messages mode)
        each message plus :data:`MESSAGE_OVERHEAD` (the system message holds the head's
        text, each turn's message its text); counted from its lines
        (:meth:`~pmm.context.tokens.TokenCounter.count_joined`), once per rendering."""
        costs = self._held()[3]
        found = costs.get((counter, self.as_messages))
        if found is not None:
            return found
        if not self.as_messages:
            found = counter.count_joined(text_pieces(self.blocks()))
        else:
            head = self.head_lines()
            found = counter.count_joined(text_pieces(head)) + MESSAGE_OVERHEAD if head else 0
            found += sum(counter.count(t.text) + MESSAGE_OVERHEAD for t in self.history)
        costs[counter, self.as_messages] = found
        return found

    def _lines(self) -> tuple[list[list[str]], list[str]]:
        """The head's sections and the recent turns' lines (:meth:`_held`)."""
        held = self._held()
        return held[1], held[2]

    def _held(self) -> _Rendering:
        """The rendering of what the context holds, made once (made again when a list of
        it was changed since, or the one taken from another context is of other parts)."""
        key = (
            self.session_id,
            self.human_prefix,
            self.ai_prefix,
            tuple(self.facts),
            tuple(self.summary),
            tuple(self.memories),
            tuple(self.history),
        )
        held = self._rendered[-1] if self._rendered else None
        if held is not None and held[0] == key:
            return held
        head = head_blocks(
            self.facts,
            self.summary,
            self.memories,
            self.session_id,
            self.human_prefix,
            self.ai_prefix,
        )
        lines = [turn_line(t, self.human_prefix, self.ai_prefix) for t in self.history]
        held = (key, head, lines, {})
        self._rendered[:] = [held]
        return held

    def text(self) -> str:
        """The context as one string (for prompts with a ``{history}`` text variable).
        With no facts, summary or memories it is exactly LangChain's buffer format."""
        return "\n\n".join("\n".join(block) for block in self.blocks())

    def messages(self) -> list[BaseMessage]:
        """The context as chat messages: a system message with the sections above the
        recent turns (if any), then one Human/AI message per turn."""
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

        out: list[BaseMessage] = []
        head = self.head()
        if head:
            out.append(SystemMessage(content="\n\n".join(head)))
        for turn in self.history:
            if turn.role == "user":
                out.append(HumanMessage(content=turn.text))
            elif turn.role == "assistant":
                out.append(AIMessage(content=turn.text))
            else:
                out.append(SystemMessage(content=turn.text))
        return out


def role_label(role: str, human_prefix: str, ai_prefix: str) -> str:
    """The label a turn of ``role`` is shown with (``Human``, ``AI``, ``System``...)."""
    if role == "user":
        return human_prefix
    if role == "assistant":
        return ai_prefix
    return role.capitalize()


def turn_line(turn: Turn, human_prefix: str, ai_prefix: str) -> str:
    """``Human: text``."""
    return f"{role_label(turn.role, human_prefix, ai_prefix)}: {turn.text}"


def group_key(turn: Turn) -> tuple[str, str]:
    """The day and thread a memory is shown under."""
    return turn.ts[:10], turn.session_id or ""


def thread_labels(memories: Sequence[Turn], session_id: str) -> dict[str, str]:
    """``{thread id: label}``: ``this thread`` for ``session_id``, else ``thread 1``,
    ``thread 2``... in the order the threads first appear in ``memories`` (by date); empty
    when every memory is of ``session_id`` (the headers then show the day alone)."""
    if all(m.session_id in (session_id, None) for m in memories):
        return {}
    labels: dict[str, str] = {session_id: THIS_THREAD}
    for memory in sorted(memories, key=lambda m: (m.ts, m.event_id)):
        thread = memory.session_id or ""
        if thread not in labels:
            labels[thread] = f"thread {len(labels)}"
    return labels


def group_header(key: tuple[str, str], labels: dict[str, str]) -> str:
    """``[2023-05-08, thread 2]`` (the day alone when the memory has no thread)."""
    day, thread = key
    label = labels.get(thread, "") if thread else ""
    inside = ", ".join(p for p in (day, label) if p)
    return f"[{inside}]"


def in_reading_order(memories: Sequence[Turn]) -> list[Turn]:
    """``memories`` grouped by day and thread, the groups in the order of their first
    turn, each group's turns in log order."""
    return [memory for memory, _ in _reading_order(memories)]


def _reading_order(memories: Sequence[Turn]) -> list[tuple[Turn, tuple[str, str]]]:
    """:func:`in_reading_order`, each memory with its :func:`group_key`."""
    keys = [group_key(m) for m in memories]
    first: dict[tuple[str, str], tuple[str, int]] = {}
    for m, key in zip(memories, keys, strict=True):
        held = first.get(key)
        if held is None or (m.ts, m.event_id) < held:
            first[key] = (m.ts, m.event_id)
    order = sorted(range(len(keys)), key=lambda i: (first[keys[i]], memories[i].event_id))
    return [(memories[i], keys[i]) for i in order]


def memory_block(
    memories: Sequence[Turn], session_id: str, human_prefix: str, ai_prefix: str
) -> list[str]:
    """The memories section's lines (without its header): a header per day and thread,
    then that group's turns."""
    labels = thread_labels(memories, session_id)
    lines: list[str] = []
    current: tuple[str, str] | None = None
    for memory, key in _reading_order(memories):
        if key != current:
            lines.append(group_header(key, labels))
            current = key
        lines.append(turn_line(memory, human_prefix, ai_prefix))
    return lines


def head_sections(
    facts: Sequence[str],
    summary: Sequence[str],
    memories: Sequence[Turn],
    session_id: str,
    human_prefix: str,
    ai_prefix: str,
) -> list[str]:
    """The rendered sections above the recent turns, in reading order."""
    blocks = head_blocks(facts, summary, memories, session_id, human_prefix, ai_prefix)
    return ["\n".join(block) for block in blocks]


def head_blocks(
    facts: Sequence[str],
    summary: Sequence[str],
    memories: Sequence[Turn],
    session_id: str,
    human_prefix: str,
    ai_prefix: str,
) -> list[list[str]]:
    """:func:`head_sections` as lines: each section's header, then its lines."""
    blocks = []
    if facts:
        blocks.append([FACTS_HEADER, *(f"- {f}" for f in facts)])
    if summary:
        blocks.append([SUMMARY_HEADER, *(f"- {b}" for b in summary)])
    if memories:
        lines = memory_block(memories, session_id, human_prefix, ai_prefix)
        blocks.append([MEMORIES_HEADER, *lines])
    return blocks


def text_pieces(blocks: Sequence[Sequence[str]]) -> list[str]:
    """The text of ``blocks`` (lines joined by a line break, blocks by a blank line) as
    its lines, each with the break after it: ``"".join(text_pieces(b))`` is the text,
    and :meth:`~pmm.context.tokens.TokenCounter.count_joined` counts it from its lines."""
    pieces: list[str] = []
    for n, block in enumerate(blocks):
        after = "\n\n" if n < len(blocks) - 1 else ""
        pieces += [f"{line}\n" for line in block[:-1]]
        pieces.append(block[-1] + after)
    return pieces
