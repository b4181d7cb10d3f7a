"""Serving: the ASGI app (app.py) as routers over one app state (routes/, state.py), the same
under uvicorn locally (`docchat serve`) and behind the Lambda Web Adapter in the cloud; one
mapping from errors to HTTP statuses and one JSON error shape (errors.py); the server's own
limits (middleware.py, protocol.py); the OpenAI-compatible shapes (openai_api.py); the page's
Content-Security-Policy (policy.py); the local server's door (guards.py), who is asking
(identity.py) and the request logs (observe.py).
"""
