"""Hypothesis throws arbitrary input at the webhook and the chat socket: never a 500, never a dead daemon."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.gateway.harness import Harness, gateway_harness

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=10)
bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: __import__("json").dumps(v).encode()),
    st.fixed_dictionaries({"message": json_values, "session": json_values}).map(lambda v: __import__("json").dumps(v).encode()),
)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def unreachable_model_gateway(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A gateway whose model is down (turns fail fast) and with no rate limit, so every input is processed."""
    return gateway_harness(tmp_path_factory.mktemp("fuzz"), None, provider={"base_url": "http://127.0.0.1:9", "max_retries": 0},
                           gateway={"requests_per_minute": 0})


def test_webhook_survives_any_body(tmp_path_factory):
    async def check(samples: list[bytes]) -> None:
        async with unreachable_model_gateway(tmp_path_factory) as h:
            token = await h.pair()
            for body in samples:
                response = await h.client.post("/webhook", data=body, headers=Harness.auth(token))
                assert response.status in (200, 400, 413), (body, response.status, await response.text())
                assert "error" in await response.json() or response.status == 200
            assert (await h.client.get("/health")).status == 200

    @FUZZ
    @given(st.lists(bodies, min_size=1, max_size=5))
    def run(samples: list[bytes]) -> None:
        asyncio.run(check(samples))

    run()


def test_chat_socket_survives_any_frame(tmp_path_factory):
    async def check(frames: list[str]) -> None:
        async with unreachable_model_gateway(tmp_path_factory) as h:
            token = await h.pair()
            async with h.client.ws_connect("/ws/chat") as ws:
                await ws.send_json({"type": "auth", "token": token})
                await ws.receive_json()
                for frame in frames:
                    await ws.send_str(frame)
                await ws.send_json({"type": "message", "text": "/status"})  # still answering afterwards?
                while True:
                    reply = await asyncio.wait_for(ws.receive_json(), 10)
                    if reply.get("type") == "final" and "Autonomy" in reply.get("text", ""):
                        break

    @FUZZ
    @given(st.lists(st.one_of(st.text(max_size=100), json_values.map(lambda v: __import__("json").dumps(v))), max_size=6))
    def run(frames: list[str]) -> None:
        asyncio.run(check(frames))

    run()
