"""The chat's online modes, over any OpenAI-compatible server: a LangChain v1 agent with
:class:`~pmm.integrations.agents.PMMMiddleware` (the default) or the classic LCEL chain.

    responder = online_responder("gpt-4o-mini", api_key, base_url, classic=False)
    responder.reply(mind, "alice", "Where do I live?")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pmm.errors import MissingDependencyError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

    from pmm.mind import Mind


SYSTEM_PROMPT = (
    "You are a helpful assistant with a persistent memory of earlier conversations. "
    "What you remember about the user and the conversation so far follow; use them when "
    "they help, and never invent memories you do not have."
)

AGENT_THREAD_MESSAGES = 40
"""Messages the agent keeps in its thread; older ones come back from PMM (lossless trim)."""


class Responder(Protocol):
    """Produces the reply to one message, given the session's memory."""

    banner: str

    def reply(self, mind: Mind, session: str, text: str, user: str | None = None) -> str: ...


# -- the two modes -------------------------------------------------------------------


class OnlineResponder:
    """Replies through ``prompt | ChatOpenAI | StrOutputParser`` with PMM's context."""

    def __init__(self, model: str, api_key: str, base_url: str | None) -> None:
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

        llm = _chat_model(model, api_key, base_url)
        prompt = ChatPromptTemplate.from_messages(
            [("system", SYSTEM_PROMPT), MessagesPlaceholder("history"), ("human", "{input}")]
        )
        self.chain = prompt | llm | StrOutputParser()
        where = base_url or "api.openai.com"
        self.banner = f"online (classic chain): model {model} at {where}"

    def reply(self, mind: Mind, session: str, text: str, user: str | None = None) -> str:
        history: list[BaseMessage] = mind.context(
            session, query=text, as_messages=True, user_id=user
        ).messages()
        answer = self.chain.invoke({"input": text, "history": history})
        return str(answer)


class AgentResponder:
    """Replies through a LangChain v1 agent: ``create_agent`` with :class:`PMMMiddleware`
    (PMM's context in the system message; each message stored once, by its id) and an
    in-process checkpointer for the thread (the session name is the thread id). The
    middleware saves the exchange before :meth:`reply` returns (``remembers``)."""

    remembers = True

    def __init__(self, model: str, api_key: str, base_url: str | None) -> None:
        try:
            from langchain.agents import create_agent
            from langgraph.checkpoint.memory import InMemorySaver
        except ImportError:
            raise MissingDependencyError(
                "the chat's agent mode", "langchain and langgraph", "agents"
            ) from None
        self._llm = _chat_model(model, api_key, base_url)
        self._create_agent = create_agent
        self._checkpointer = InMemorySaver()
        self._agent: Any = None
        self._mind: Mind | None = None
        where = base_url or "api.openai.com"
        self.banner = f"online: model {model} at {where}"

    def _agent_for(self, mind: Mind) -> Any:
        if self._agent is None or self._mind is not mind:
            from pmm.integrations.agents import PMMMiddleware

            self._agent = self._create_agent(
                self._llm,
                [],
                system_prompt=SYSTEM_PROMPT,
                middleware=[PMMMiddleware(mind=mind, trim_to=AGENT_THREAD_MESSAGES)],
                checkpointer=self._checkpointer,
            )
            self._mind = mind
        return self._agent

    def reply(self, mind: Mind, session: str, text: str, user: str | None = None) -> str:
        import uuid

        from langchain_core.messages import HumanMessage, RemoveMessage

        agent = self._agent_for(mind)
        config: Any = {"configurable": {"thread_id": session}}
        if user is not None:
            config["configurable"]["user_id"] = user
        message = HumanMessage(content=text, id=str(uuid.uuid4()))
        try:
            result = agent.invoke({"messages": [message]}, config)
        except BaseException:
            # Nothing of a failed or cancelled turn stays: not in the log (the middleware
            # stores after the agent ends), and not in the thread's checkpoint either.
            state = agent.get_state(config)
            if any(m.id == message.id for m in state.values.get("messages", [])):
                agent.update_state(config, {"messages": [RemoveMessage(id=str(message.id))]})
            raise
        return str(result["messages"][-1].text)


def online_responder(
    model: str, api_key: str, base_url: str | None, *, classic: bool = False
) -> Responder:
    """The online mode: the v1 agent, or the classic LCEL chain with ``classic``."""
    if classic:
        return OnlineResponder(model, api_key, base_url)
    return AgentResponder(model, api_key, base_url)


def _chat_model(model: str, api_key: str, base_url: str | None) -> BaseChatModel:
    """``ChatOpenAI`` for an OpenAI-compatible server (one retry, a two-minute timeout)."""
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        raise MissingDependencyError(
            "chatting through an OpenAI-compatible model", "langchain-openai", "llm"
        ) from None
    from pydantic import SecretStr

    return ChatOpenAI(
        model=model,
        api_key=SecretStr(api_key),
        base_url=base_url or None,
        max_retries=1,
        timeout=120,
    )


# -- the loop ------------------------------------------------------------------------
