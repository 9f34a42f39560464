"""Assembling what a model sees, in four steps: candidates, their cost and worth, packing,
rendering.

    ctx = assemble(session_id="alice", history=turns_newest_first, budget=2000,
                   counter=get_token_counter(), facts=["Name: Ana"],
                   memories=recalled_turns_best_first, query="where did I go camping?")
    ctx.text()        # "Key information:\\n- Name: Ana\\n\\nRelevant memories:\\n[2023-05-08, ..."
    ctx.messages()    # [SystemMessage(...), HumanMessage(...), AIMessage(...)]

The budget is spent, not reserved: no section keeps a share it has nothing worth putting in.
The order of packing is the order of worth:

1. **The newest exchange**, always (the newest turn, cut to fit if it alone is over the
   budget, and the turn it answers), then **the recent floor**: the newest
   :attr:`Policy.recent_turns` turns (at least :data:`RECENT_FLOOR`), within half the
   budget. A thread's next message refers to what was just said ("and her sister?"); the
   floor keeps two exchanges whatever a benchmark rewards, because a benchmark of old
   evidence (LoCoMo's rarely lies in the last turns) would otherwise tune them away.
2. **Key facts** about the user, at most :attr:`Policy.facts` lines, within a tenth of
   what is left: few lines, each a complete statement, read on every call. On LoCoMo they
   cost evidence (their tokens would hold memories), so they are kept short.
3. **Relevant memories**, in recall order, until the budget is spent (recall is asked for
   as many as the budget could hold). Each memory costs its line; a memory longer than
   :attr:`Policy.memory_tokens` shows its excerpt, the whole sentences that bear on the
   question (:mod:`pmm.context.excerpt`), or its digest when that is as good and shorter;
   the best of them (one per :attr:`Policy.whole_every` tokens of budget) show whole, up
   to 400 tokens: where messages are long, a question's evidence is spread over a message
   more than its words show, and the best-ranked messages are worth their length.
   Filling the budget in recall order already covers a question's several sessions (at
   2,000 tokens some 50 memories); :attr:`Policy.spread` > 0 spreads them further (each
   memory already taken from a memory's day and thread moves it that many places down),
   which cost evidence on LoCoMo's folds, so it is off by default.
4. **The stored session summary**: bullets about turns of this thread not shown.
5. **Older turns of the thread**, newest first, with what is left (a turn that was taken as
   a memory moves into the recent turns, and the next memories take what it freed). The
   shown history starts at a user turn when it holds one (some chat APIs refuse a history
   that opens with the assistant).

Nothing is shown twice: a memory that is a shown turn, or says its words again
(:func:`~pmm.text.words.repeat_key`), is left out, and so is a summary bullet whose turns
are all shown. The rendered context is counted at the end and is never over the budget
(the last memory taken goes first if a rare tokenisation across lines costs more than the
lines did apart). With no facts, summary or memories the text is exactly LangChain's buffer
format (``Human: ...\\nAI: ...``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pmm.context.budget import Spend, count_upto, truncate_to_tokens
from pmm.context.excerpt import excerpt, query_terms
from pmm.context.parts import (
    FACTS_HEADER,
    HISTORY_HEADER,
    MEMORIES_HEADER,
    MESSAGE_OVERHEAD,
    SUMMARY_HEADER,
    Context,
    Turn,
    group_key,
    role_label,
    turn_line,
)
from pmm.context.plan import Plan, rendered_cost
from pmm.context.tokens import TokenCounter
from pmm.text.stemmer import fts_tokens

__all__ = [
    "FACTS_HEADER",
    "HISTORY_HEADER",
    "MEMORIES_HEADER",
    "MESSAGE_OVERHEAD",
    "RECENT_FLOOR",
    "SUMMARY_HEADER",
    "Context",
    "Policy",
    "Turn",
    "assemble",
    "count_upto",
    "role_label",
    "truncate_to_tokens",
]

RECENT_FLOOR = 4
"""Recent turns always kept (two exchanges) when they fit in half the budget."""
GROUP_HEADER_TOKENS = 12
"""What a memory group's header costs at most with a thread label (``[2023-05-08, thread
12]``), plus its line break."""
DAY_HEADER_TOKENS = 8
"""What a header of the day alone (``[2023-05-08]``, every memory of this thread) costs at
most, plus its line break."""
SMALLEST_LINE = 6
"""Below this many tokens left, no memory line fits: packing stops looking."""
WHOLE_MEMORY_TOKENS = 400
"""What a memory shown whole (one of the best, :attr:`Policy.whole_every`) may cost."""
MAX_MISSES = 12
"""Memories in a row that do not fit what is left before packing stops looking (the
budget is then as good as full; trying all 200 costs more than it finds)."""


@dataclass(frozen=True, slots=True)
class Policy:
    """How the budget is spent (the ``context_*`` settings; defaults chosen on LoCoMo by
    cross-validation by conversation, ``docs/benchmarks/context.md``)."""

    recent_turns: int = 4
    """Newest turns of the thread shown before memories (never fewer than RECENT_FLOOR)."""
    memory_tokens: int = 40
    """A memory longer than this shows its excerpt (or its digest)."""
    spread: float = 0.0
    """Places a memory moves down per memory already taken from its day and thread."""
    facts: int = 5
    """Key-fact lines at most (0: none)."""
    whole_every: int = 250
    """One of the best memories shows whole (up to WHOLE_MEMORY_TOKENS) per this many tokens
    of budget, the rest excerpted (0: every long memory excerpted)."""
    max_memories: int = 200
    """Memories at most (the ``recall_k`` cap)."""
    summary: bool = True
    """Show the stored session summary's bullets about turns not shown."""


def assemble(
    *,
    session_id: str,
    history: Sequence[Turn],
    budget: int,
    counter: TokenCounter,
    facts: Sequence[str] = (),
    memories: Sequence[Turn] = (),
    human_prefix: str = "Human",
    ai_prefix: str = "AI",
    as_messages: bool = False,
    summary: Sequence[tuple[str, Sequence[int]]] = (),
    memory_limit: int | None = None,
    query: str | None = None,
    policy: Policy | None = None,
) -> Context:
    """Fit ``history`` (newest first), ``facts``, ``memories`` (best first) and the stored
    summary's ``(bullet, cited event ids)`` into ``budget`` tokens (see the module
    docstring for the order and why). ``query`` is what excerpts of long memories look
    for; ``memory_limit`` caps how many memories are shown."""
    policy = policy or Policy()
    plan = Plan(Spend(budget), counter, session_id, as_messages, human_prefix, ai_prefix)
    history = [t for t in history if t.text.strip()]  # erased turns are shown nowhere
    memories = [m for m in memories if m.text.strip()]
    limit = policy.max_memories if memory_limit is None else min(memory_limit, policy.max_memories)

    _recent_turns(plan, history, policy)
    if plan.recent or not history:
        _key_facts(plan, facts, policy)
        _memories(plan, memories, query, policy, limit)
        if policy.summary:
            _summary(plan, summary)
        if _older_turns(plan, history):
            plan.resync()
        _memories(plan, memories, query, policy, limit)  # into what moved or was left
        _drop_covered_bullets(plan)
    return _render(plan)


def _recent_turns(plan: Plan, history: list[Turn], policy: Policy) -> None:
    """Step 1: the newest exchange (the newest turn cut to fit if need be), then the
    recent floor within half the budget."""
    if not history or plan.spend.left <= 0:
        return
    newest = history[0]
    cost = plan.turn_cost(newest)
    if cost > plan.spend.left:
        bare = plan.turn_cost(Turn(newest.role, "", newest.event_id))
        spare = plan.spend.left - bare
        text = truncate_to_tokens(newest.text, spare - 1, plan.count) if spare > 1 else ""
        newest = Turn(newest.role, text, newest.event_id, newest.ts, newest.session_id)
        cost = plan.turn_cost(newest)
        if not text or cost > plan.spend.left:
            return  # never show older turns without the newest one
    plan.spend.take(cost)
    plan.recent.append(newest)
    cap = max(plan.spend.budget // 2, plan.spend.spent)
    wanted = max(policy.recent_turns, RECENT_FLOOR)
    for turn in history[1:wanted]:
        cost = plan.turn_cost(turn)
        if plan.spend.spent + cost > cap or not plan.spend.take(cost):
            break
        plan.recent.append(turn)


def _key_facts(plan: Plan, facts: Sequence[str], policy: Policy) -> None:
    """Step 2: key facts, at most ``policy.facts`` lines within a tenth of what is left."""
    cap = plan.spend.left // 10
    for fact in facts[: policy.facts]:
        line = plan.line_cost(f"- {fact}")
        opening = plan.section_cost(FACTS_HEADER, bool(plan.facts))
        if line + opening > cap or not plan.take_section(FACTS_HEADER, bool(plan.facts), line):
            break
        cap -= line + opening
        plan.facts.append(fact)


def _memories(
    plan: Plan, memories: list[Turn], query: str | None, policy: Policy, limit: int
) -> None:
    """Step 3: memories in recall order, spread over days and threads, each whole or
    excerpted, until the budget is spent."""
    if not memories or limit <= 0:
        return
    taken = [*plan.recent, *plan.memories]
    shown = {t.event_id for t in taken}
    said = {plan.key_of(t) for t in taken} - {frozenset()}
    terms = query_terms(query)
    groups = [group_key(m) for m in memories]
    misses = 0
    for rank in _spread_order(plan, groups, policy.spread):
        if len(plan.memories) >= limit or plan.spend.left < SMALLEST_LINE:
            break
        memory = memories[rank]
        if memory.event_id in shown:
            continue
        key = plan.key_of(memory)
        if key and key in said:
            continue
        if memory.event_id not in plan.shown_as:
            whole = plan.spend.budget // policy.whole_every if policy.whole_every else 0
            cap = policy.memory_tokens if rank >= whole else WHOLE_MEMORY_TOKENS
            as_shown = _shown_text(plan, memory, terms, cap)
            line = turn_line(as_shown, plan.human_prefix, plan.ai_prefix)
            plan.shown_as[memory.event_id] = (as_shown, plan.line_cost(line))
        shown_memory, cost = plan.shown_as[memory.event_id]
        group = groups[rank]
        if group not in plan.groups:
            labelled = any(t != plan.session_id for _, t in (*plan.groups, group))
            cost += GROUP_HEADER_TOKENS if labelled else DAY_HEADER_TOKENS
        if not plan.take_section(MEMORIES_HEADER, bool(plan.memories), cost):
            misses += 1
            if misses >= MAX_MISSES:  # the budget is as good as full
                break
            continue
        misses = 0
        plan.memories.append(shown_memory)
        plan.groups[group] += 1
        shown.add(memory.event_id)
        if key:
            said.add(key)


def _spread_order(plan: Plan, groups: list[tuple[str, str]], spread: float) -> Iterator[int]:
    """The memories' ranks in the order packing tries them: recall's, or with ``spread`` > 0
    each moved down that many places per memory already taken from its day and thread
    (a lazy greedy: a rank is scored again when it comes up, from what is taken by then)."""
    if not spread > 0:  # nothing moves: recall's order
        yield from range(len(groups))
        return
    heap = [(float(rank), rank) for rank in range(len(groups))]  # (score, rank)
    while heap:
        score, rank = heapq.heappop(heap)
        current = rank + spread * plan.groups[groups[rank]]
        if current > score:  # its day/thread gained a memory since it was scored
            heapq.heappush(heap, (current, rank))
            continue
        yield rank


def _shown_text(plan: Plan, memory: Turn, terms: frozenset[str], cap: int) -> Turn:
    """``memory`` as shown: whole when it costs at most ``cap``; else its excerpt, or its
    digest (``alt``) when that fits ``cap`` and holds at least as many query terms."""
    text, cut = excerpt(memory.text, terms, cap, plan.count)
    if not cut:
        return memory
    summarized = memory.summarized
    if (
        memory.alt
        and plan.count.count(memory.alt) <= cap
        and len(terms & set(fts_tokens(memory.alt))) >= len(terms & set(fts_tokens(text)))
    ):
        text, cut, summarized = memory.alt, False, True
    return Turn(
        memory.role, text, memory.event_id, memory.ts, memory.session_id, summarized, excerpt=cut
    )


def _summary(plan: Plan, summary: Sequence[tuple[str, Sequence[int]]]) -> None:
    """Step 4: the stored summary's bullets about turns of this thread that are not shown."""
    covered = {t.event_id for t in plan.recent} | {m.event_id for m in plan.memories}
    for text, cited in summary:
        if all(c in covered for c in cited):
            continue
        cost = plan.line_cost(f"- {text}")
        if plan.take_section(SUMMARY_HEADER, bool(plan.bullets), cost):
            plan.bullets.append((text, cited))


def _older_turns(plan: Plan, history: list[Turn]) -> bool:
    """Step 5: older turns of the thread with what is left (a memory that is one of them
    moves here), then drop what a shown history must not open with. Says whether a memory
    moved (the running account then overstates what is spent)."""
    if not plan.recent:
        return False
    moved = False
    as_memory = {m.event_id for m in plan.memories}
    for turn in history[len(plan.recent) :]:
        if not plan.spend.take(plan.turn_cost(turn)):
            break
        if turn.event_id in as_memory:  # its memory line goes (resync refunds it)
            plan.memories = [m for m in plan.memories if m.event_id != turn.event_id]
            moved = True
        plan.recent.append(turn)
    if any(t.role == "user" for t in plan.recent):
        while plan.recent[-1].role != "user":
            plan.spend.refund(plan.turn_cost(plan.recent.pop()))
    return moved


def _drop_covered_bullets(plan: Plan) -> None:
    """A summary bullet whose turns are all shown (as turns or memories) goes."""
    shown = {t.event_id for t in plan.recent} | {m.event_id for m in plan.memories}
    plan.bullets = [(t, c) for t, c in plan.bullets if not all(i in shown for i in c)]


def _render(plan: Plan) -> Context:
    """The context of what was packed, counted as rendered; never over the budget (the
    last memory, bullet or fact taken goes while it is)."""
    while True:
        ctx = plan.context()
        tokens = rendered_cost(ctx, plan.count)
        if tokens <= plan.spend.budget:
            return plan.context(tokens)
        if plan.memories:
            plan.memories.pop()
        elif plan.bullets:
            plan.bullets.pop()
        elif plan.facts:
            plan.facts.pop()
        elif len(plan.recent) > 1:
            plan.recent.pop()
        else:
            plan.recent.clear()
