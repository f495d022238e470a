"""The HTTP gateway of `edge run`: health, metrics, pairing, webhook, web chat, SSE, OpenAI-compatible API."""
