"""The API's routes, one router per concern: the page and the server's state (meta), documents,
the synced sources, saved conversations, the feedback on their answers, the chat stream (chat)
and the OpenAI-compatible API (openai)."""

from docchat.serve.routes import chat, conversations, documents, feedback, meta, openai, sources

ROUTERS = (
    meta.router,
    documents.router,
    documents.collections_router,
    sources.router,
    conversations.router,
    feedback.router,
    feedback.team_router,
    chat.router,
    openai.router,
)
