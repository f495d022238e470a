"""The gateway's routes over real HTTP: pairing, webhook, WebSocket chat, SSE, health, metrics, bad input."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json

import orjson

from edge.gateway.auth import new_pairing_code
from tests.fakes.llm_server import ScriptedLLM, Step
from tests.gateway.harness import Harness, gateway_harness


async def webhook(h: Harness, token: str, body, **headers):  # type: ignore[no-untyped-def]
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return await h.client.post("/webhook", data=data, headers={**Harness.auth(token), **headers})


async def test_health_and_metrics_need_no_token_and_show_no_secrets(tmp_path, llm: ScriptedLLM):
    async with gateway_harness(tmp_path, llm) as h:
        health = await h.client.get("/health")
        body = await health.json()
        metrics = await (await h.client.get("/metrics")).text()
    assert health.status == 200 and body["status"] == "ok" and body["components"]["agent"]["status"] == "up"
    assert "token" not in json.dumps(body).lower()
    for name in ("edge_turns_total", "edge_tool_calls_total", "edge_prompt_tokens_total", "edge_queue_depth",
                 "edge_rss_bytes", "edge_loop_lag_seconds", 'edge_component_restarts_total{component="agent"}'):
        assert name in metrics


async def test_pairing_gives_a_token_once_and_locks_out_guessers(tmp_path, llm: ScriptedLLM):
    async with gateway_harness(tmp_path, llm) as h:
        code = await new_pairing_code(h.runtime.db, 600)
        first = await h.client.post("/pair", headers={"X-Pairing-Code": code})
        again = await h.client.post("/pair", headers={"X-Pairing-Code": code})  # one-time
        statuses = [(await h.client.post("/pair", headers={"X-Pairing-Code": "00000000"})).status for _ in range(5)]
        fresh = await new_pairing_code(h.runtime.db, 600)
        locked = await h.client.post("/pair", headers={"X-Pairing-Code": fresh})
        stored = await h.runtime.db.call(lambda con: con.execute("SELECT token_hash FROM clients").fetchall())
        token = (await first.json())["token"]
    assert first.status == 200 and again.status == 403
    assert statuses[:4] == [403] * 4 and locked.status == 429 and "Retry-After" in locked.headers
    assert stored == [(hashlib.sha256(token.encode()).hexdigest(),)]  # only the hash is kept


async def test_webhook_round_trip(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "time_now", "arguments": {}}]), "It is noon.")
    async with gateway_harness(tmp_path, llm) as h:
        token = await h.pair()
        response = await webhook(h, token, {"message": "what time is it?", "session": "kitchen"})
        body = await response.json()
        turns = h.counters.turns_total
    assert response.status == 200 and body == {"response": "It is noon.", "model": "test-model"}
    assert turns == 1 and llm.chats()[0]["messages"][-1]["content"] == "what time is it?"


async def test_webhook_signature_is_checked_when_a_secret_is_set(tmp_path, llm: ScriptedLLM):
    async with gateway_harness(tmp_path, llm, webhook_secret="s3cret-value") as h:
        token = await h.pair()
        raw = b'{"message": "hi"}'
        good = "sha256=" + hmac.new(b"s3cret-value", raw, hashlib.sha256).hexdigest()
        ok = await webhook(h, token, raw, **{"X-Edge-Signature": good})
        bad = await webhook(h, token, raw, **{"X-Edge-Signature": "sha256=" + "0" * 64})
        missing = await webhook(h, token, raw)
        reason = (await bad.json())["error"]
    assert ok.status == 200 and bad.status == 401 and missing.status == 401
    assert "X-Edge-Signature" in reason


async def test_idempotency_key_returns_the_first_response_even_concurrently(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text="first answer", delay=0.05), "second answer")
    async with gateway_harness(tmp_path, llm) as h:
        token = await h.pair()
        headers = {"X-Idempotency-Key": "abc-123"}
        one, two = await asyncio.gather(webhook(h, token, {"message": "hi"}, **headers),
                                        webhook(h, token, {"message": "hi"}, **headers))
        later = await webhook(h, token, {"message": "hi"}, **headers)
        bodies = [await r.json() for r in (one, two, later)]
    assert all(b["response"] == "first answer" for b in bodies) and len(llm.chats()) == 1
    assert later.headers.get("Idempotent-Replayed") == "true"


async def test_bad_input_gets_a_reason_and_never_a_traceback(tmp_path, llm: ScriptedLLM):
    async with gateway_harness(tmp_path, llm) as h:
        token = await h.pair()
        cases = {
            "no token": (await h.client.post("/webhook", json={"message": "hi"})),
            "malformed": await webhook(h, token, b"{not json"),
            "not an object": await webhook(h, token, b"[1, 2]"),
            "no message": await webhook(h, token, {"text": "hi"}),
            "bad session": await webhook(h, token, {"message": "hi", "session": "../../etc"}),
            "too large": await webhook(h, token, {"message": "x" * 70_000}),
            "unknown route": await h.client.get("/nope"),
            "wrong method": await h.client.get("/webhook"),
        }
        bodies = {name: await r.json() for name, r in cases.items()}
    assert {name: r.status for name, r in cases.items()} == {
        "no token": 401, "malformed": 400, "not an object": 400, "no message": 400, "bad session": 400,
        "too large": 413, "unknown route": 404, "wrong method": 405}
    assert "malformed JSON" in bodies["malformed"]["error"] and bodies["unknown route"]["error"] == "no such route: GET /nope"
    assert all("Traceback" not in json.dumps(b) for b in bodies.values())


async def test_per_client_rate_limit(tmp_path, llm: ScriptedLLM):
    async with gateway_harness(tmp_path, llm, gateway={"requests_per_minute": 2}) as h:
        token = await h.pair()
        statuses = [(await webhook(h, token, {"message": f"m{i}"})).status for i in range(3)]
        other = await webhook(h, await h.pair("other"), {"message": "hi"})
    assert statuses == [200, 200, 429] and other.status == 200


async def test_websocket_chat_streams_and_approvals_work(tmp_path, llm: ScriptedLLM):
    write = {"name": "file_write", "arguments": {"path": "note.md", "content": "from the web"}}
    llm.script(Step(text="Hello from edge", chunk=3), Step(tool_calls=[write]), "Saved it.")
    async with gateway_harness(tmp_path, llm) as h:
        token = await h.pair()
        async with h.client.ws_connect("/ws/chat") as ws:
            await ws.send_json({"type": "auth", "token": token})
            assert (await ws.receive_json())["type"] == "ready"
            await ws.send_json({"type": "message", "text": "hi"})
            frames = await _frames_until_final(ws)
            assert "".join(f["text"] for f in frames if f["type"] == "delta") == "Hello from edge"
            assert len([f for f in frames if f["type"] == "delta"]) > 1
            await ws.send_json({"type": "message", "text": "save a note"})
            approval = await _next_of(ws, "approval")
            assert "file_write" in approval["text"]
            await ws.send_json({"type": "approve", "id": approval["approval_id"], "answer": "yes"})
            final = (await _frames_until_final(ws))[-1]
        written = (h.runtime.config.workspace / "note.md").read_text()
    assert final["text"] == "Saved it." and written == "from the web"


async def test_websocket_refuses_without_auth_and_reports_bad_frames(tmp_path, llm: ScriptedLLM):
    async with gateway_harness(tmp_path, llm) as h:
        async with h.client.ws_connect("/ws/chat") as ws:
            await ws.send_json({"type": "auth", "token": "wrong"})
            closed = await ws.receive()
        token = await h.pair()
        async with h.client.ws_connect("/ws/chat") as ws:
            await ws.send_json({"type": "auth", "token": token})
            await ws.receive_json()
            errors = []
            for frame in ("{bad", "[1]", '{"type": "dance"}', '{"type": "message", "text": ""}',
                          '{"type": "approve", "id": "nope", "answer": "yes"}'):
                await ws.send_str(frame)
                errors.append((await ws.receive_json())["error"])
            await ws.send_json({"type": "message", "text": "still alive?"})
            final = (await _frames_until_final(ws))[-1]
    assert closed.data == 4401
    assert "malformed JSON" in errors[0] and "unknown frame type" in errors[2] and "no such question" in errors[4]
    assert final["text"] == "ok"


async def test_approval_can_only_be_answered_by_the_asker(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "shell", "arguments": {"command": "date"}}]), "Done.")
    async with gateway_harness(tmp_path, llm, security={"approval_timeout_s": 0.5}) as h:
        alice, mallory = await h.pair("alice"), await h.pair("mallory")
        async with h.client.ws_connect("/ws/chat") as ws_a, h.client.ws_connect("/ws/chat") as ws_m:
            for ws, token in ((ws_a, alice), (ws_m, mallory)):
                await ws.send_json({"type": "auth", "token": token})
                await ws.receive_json()
            await ws_a.send_json({"type": "message", "text": "run date"})
            approval = await _next_of(ws_a, "approval")
            await ws_m.send_json({"type": "approve", "id": approval["approval_id"], "answer": "yes"})
            refused = await ws_m.receive_json()
            await _frames_until_final(ws_a)
        audit = await h.runtime.store.audit_trail()
    assert "no such question" in refused["error"]
    assert audit[-1].tool == "shell" and audit[-1].decision == "denied"  # timed out: counted as no


async def test_events_stream_agent_activity(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "time_now", "arguments": {}}]), "noon")
    async with gateway_harness(tmp_path, llm) as h:
        token = await h.pair()
        events = await h.client.get("/api/events", headers=Harness.auth(token))
        assert events.status == 200 and events.content_type == "text/event-stream"
        await webhook(h, token, {"message": "time?"})
        seen: list[str] = []
        while "turn_finished" not in seen:
            line = (await asyncio.wait_for(events.content.readline(), 5)).decode()
            if line.startswith("event: "):
                seen.append(line[7:].strip())
        unauthorized = await h.client.get("/api/events")
    assert seen == ["turn_started", "tool", "turn_finished"] and unauthorized.status == 401


async def test_web_page_is_self_contained(tmp_path, llm: ScriptedLLM):
    async with gateway_harness(tmp_path, llm) as h:
        response = await h.client.get("/")
        page = await response.text()
    assert response.status == 200 and response.content_type == "text/html"
    assert "/ws/chat" in page and "/pair" in page and "http" not in page.replace("https:", "").split("<script>")[0]
    assert "<script src" not in page and "<link" not in page  # no CDN, no second file


async def _frames_until_final(ws) -> list[dict]:  # type: ignore[no-untyped-def]
    frames = []
    while not frames or frames[-1]["type"] != "final":
        frames.append(orjson.loads((await asyncio.wait_for(ws.receive(), 10)).data))
    return frames


async def _next_of(ws, kind: str) -> dict:  # type: ignore[no-untyped-def]
    while True:
        frame = orjson.loads((await asyncio.wait_for(ws.receive(), 10)).data)
        if frame["type"] == kind:
            return frame
