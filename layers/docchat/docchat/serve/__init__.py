"""Serving: app.py is the ASGI app (chat SSE, the OpenAI-compatible API in openai_api.py,
documents, conversations), the same under uvicorn locally (`docchat serve`) and behind the
Lambda Web Adapter in the cloud. guards.py is the local server's door, identity.py who is
asking, observe.py the request logs.
"""
