"""The Telegram channel: long-polls the Bot API, publishes messages on the bus, and streams replies back.

Unknown senders never reach the agent: they get a pairing code the owner approves (`edge pair approve
CODE`, or `/approve CODE` from an allowed chat). The update offset is saved before a message is handled,
so a restart neither replays a message nor answers it twice. Replies stream as a draft edited in place,
risky tools ask with inline buttons, and photos, voice and files get a polite "not yet".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edge.bus import Bus, BusFull, InboundMessage, OutboundMessage
from edge.channels import telegram_senders as senders
from edge.channels.telegram_api import BotApi, TelegramError
from edge.channels.telegram_format import LIMIT, split, to_html
from edge.config import TelegramConfig
from edge.memory.db import Database

log = logging.getLogger(__name__)
OFFSET_KEY = "telegram:offset"
TYPING_EVERY_S = 4.0
UNSUPPORTED = "Sorry, I can only read text for now: photos, voice messages and files are not supported yet."
_ANSWERS = {"yes": "Approved", "no": "Denied", "always": "Always allowed"}


@dataclass
class _Reply:
    """A turn being answered in a chat: its draft message, and the typing indicator while it works."""

    chat_id: int
    typing: asyncio.Task[None] | None = None
    draft_id: int | None = None
    text: str = ""
    shown: str = ""  # what the draft shows now
    edited_at: float = 0.0


class TelegramChannel:
    name = "telegram"

    def __init__(self, config: TelegramConfig, token: str, bus: Bus, db: Database, backoff_s: float = 1.0) -> None:
        self.config, self.bus, self.db = config, bus, db
        self.api = BotApi(config.api_base, token, config.poll_timeout_s)
        self._backoff_s = backoff_s
        self._replies: dict[str, _Reply] = {}  # inbound message id → its reply in progress
        self.username = ""
        bus.register(self)

    def default_chat(self) -> int | None:
        """Where notifications go: [telegram] notify_chat, else the first allowed numeric user id."""
        candidates = [self.config.notify_chat, *self.config.allowed_users]
        return next((int(c) for c in candidates if c.lstrip("-").isdigit()), None)

    # --- receiving ------------------------------------------------------------------------------
    async def run(self, started: Callable[[], None]) -> None:
        try:
            me = await self.api.call("getMe")
        except TelegramError as exc:
            if exc.unauthorized:
                raise TelegramError(401, "the bot token was refused; check the variable named by [telegram] token_env") from None
            raise
        self.username = str(me.get("username", ""))
        log.info("Telegram: polling as @%s", self.username)
        started()
        offset = await self._load_offset()
        delay = self._backoff_s
        try:
            while True:
                try:
                    updates = await self.api.call("getUpdates", offset=offset, timeout=self.config.poll_timeout_s,
                                                  allowed_updates=["message", "callback_query"])
                except TelegramError as exc:
                    delay = await self._after_failure(exc, delay)
                    continue
                delay = self._backoff_s
                for update in updates:
                    if update["update_id"] < offset:
                        continue  # already handled (a duplicate delivery)
                    offset = update["update_id"] + 1
                    await self._save_offset(offset)  # first: a crash now must not make us answer it twice
                    await self._handle(update)
                for chat in await senders.take_newly_approved(self.db):
                    await self._say(chat, "You are paired now. Say hello!")
        finally:
            await self.api.close()

    async def _after_failure(self, exc: TelegramError, delay: float) -> float:
        if exc.unauthorized:
            raise TelegramError(401, "the bot token was refused; check the variable named by [telegram] token_env")
        if exc.status == 409:
            log.error("Telegram: another program is polling with this bot token (409 Conflict); "
                      "only one edge or bot may use a token — stop the other one")
        elif exc.status == 429 and exc.retry_after:
            log.warning("Telegram: rate limited; waiting %s s as asked", exc.retry_after)
            await asyncio.sleep(float(exc.retry_after))
            return delay
        else:
            log.warning("Telegram: %s; retrying in %.0f s", exc, delay)
        await asyncio.sleep(delay)
        return min(delay * 2, 60.0)

    async def _handle(self, update: dict[str, Any]) -> None:
        if "callback_query" in update:
            await self._button(update["callback_query"])
            return
        message = update.get("message") or {}
        sender, chat = message.get("from") or {}, (message.get("chat") or {}).get("id")
        if not sender or chat is None or sender.get("is_bot"):
            return
        user_id, username = int(sender["id"]), str(sender.get("username", ""))
        if not (senders.allowed_by_config(self.config.allowed_users, user_id, username)
                or await senders.is_approved(self.db, user_id)):
            code = await senders.issue_code(self.db, user_id, username, chat)
            await self._say(chat, f"Hello! I only talk to people my owner knows. Your pairing code is {code}.\n"
                                  f"Ask the owner to approve it: edge pair approve {code}")
            log.info("Telegram: unknown sender %s (@%s) was given a pairing code", user_id, username or "-")
            return
        text = message.get("text")
        if not isinstance(text, str):
            await self._say(chat, UNSUPPORTED)
            return
        if text.startswith("/approve"):
            approved = await senders.approve(self.db, text.removeprefix("/approve").strip())
            await self._say(chat, f"Approved {approved[1] or approved[0]}." if approved else "No pending code like that.")
            return
        inbound = InboundMessage("telegram", str(user_id), f"telegram:{chat}", self._without_mention(text), interactive=True)
        reply = _Reply(chat)
        self._replies[inbound.id] = reply
        try:
            self.bus.publish(inbound)
        except BusFull as exc:
            del self._replies[inbound.id]
            await self._say(chat, str(exc))
            return
        reply.typing = asyncio.create_task(self._keep_typing(chat))

    def _without_mention(self, text: str) -> str:
        """In groups commands arrive as /new@edge_bot: the agent should see /new."""
        command, space, rest = text.partition(" ")
        if command.startswith("/") and self.username and command.lower().endswith("@" + self.username.lower()):
            return command[: -len(self.username) - 1] + space + rest
        return text

    async def _button(self, query: dict[str, Any]) -> None:
        kind, _, rest = str(query.get("data", "")).partition(":")
        approval_id, _, answer = rest.partition(":")
        user = str((query.get("from") or {}).get("id", ""))
        accepted = kind == "ap" and answer in _ANSWERS and self.bus.answer_approval(approval_id, answer, "telegram", user)  # type: ignore[arg-type]
        await self._quietly("answerCallbackQuery", callback_query_id=query.get("id"),
                            text=_ANSWERS[answer] if accepted else "This question is not yours, or it has expired.")
        message = query.get("message") or {}
        if accepted and message:
            await self._quietly("editMessageReplyMarkup", chat_id=message["chat"]["id"], message_id=message["message_id"],
                                reply_markup={"inline_keyboard": []})

    async def _keep_typing(self, chat: int) -> None:
        while True:
            await self._quietly("sendChatAction", chat_id=chat, action="typing")
            await asyncio.sleep(TYPING_EVERY_S)

    # --- sending --------------------------------------------------------------------------------
    async def send(self, message: OutboundMessage) -> None:
        reply = self._replies.get(message.reply_to)
        if reply is None:  # a notification (cron, heartbeat, hardware) or a reply to a turn we no longer track
            chat = _chat_of(message.session_key) or self.default_chat()
            if chat is None:
                log.warning("Telegram: no chat to send a notification to; set [telegram] notify_chat")
            elif message.text:
                await self._say(chat, message.text, formatted=True)
            return
        if message.kind == "delta":
            reply.text += message.text
            await self._update_draft(reply)
        elif message.kind == "notice":
            await self._say(reply.chat_id, "⚠️ " + message.text)
        elif message.kind == "approval":
            keyboard = [[{"text": label, "callback_data": f"ap:{message.data['approval_id']}:{answer}"}
                         for answer, label in (("yes", "Approve"), ("no", "Deny"), ("always", "Always"))]]
            await self._quietly("sendMessage", chat_id=reply.chat_id, text=message.text,
                                reply_markup={"inline_keyboard": keyboard})
        elif message.kind == "final":
            del self._replies[message.reply_to]
            if reply.typing is not None:
                reply.typing.cancel()
            await self._finish(reply, message.text or reply.text)

    async def _update_draft(self, reply: _Reply) -> None:
        """Edit the draft at most every edit_interval_s; the first piece of text creates it."""
        now = time.monotonic()
        if reply.draft_id is not None and now - reply.edited_at < self.config.edit_interval_s:
            return
        text = reply.text[:LIMIT].strip()
        if not text or text == reply.shown:
            return
        reply.edited_at = now
        if reply.draft_id is None:
            sent = await self._quietly("sendMessage", chat_id=reply.chat_id, text=text)
            reply.draft_id = sent["message_id"] if sent else None
        else:
            await self._quietly("editMessageText", chat_id=reply.chat_id, message_id=reply.draft_id, text=text)
        reply.shown = text

    async def _finish(self, reply: _Reply, text: str) -> None:
        pieces = split(text) or ["(no answer)"]
        if reply.draft_id is None:
            await self._say(reply.chat_id, pieces[0], formatted=True)
        else:
            await self._send_formatted("editMessageText", reply.chat_id, pieces[0], message_id=reply.draft_id)
        for piece in pieces[1:]:
            await self._say(reply.chat_id, piece, formatted=True)

    async def _say(self, chat: int, text: str, formatted: bool = False) -> None:
        for piece in split(text):
            if formatted:
                await self._send_formatted("sendMessage", chat, piece)
            else:
                await self._quietly("sendMessage", chat_id=chat, text=piece)

    async def _send_formatted(self, method: str, chat: int, text: str, **extra: Any) -> None:
        """HTML when Telegram takes it; plain text when it rejects the entities."""
        html = to_html(text)
        if len(html) <= LIMIT:
            try:
                await self._call(method, chat_id=chat, text=html, parse_mode="HTML", **extra)
                return
            except TelegramError as exc:
                if "not modified" in exc.description:
                    return
                if "parse entities" not in exc.description:
                    log.error("Telegram: %s failed: %s", method, exc)
                    return
        await self._quietly(method, chat_id=chat, text=text, **extra)

    async def _quietly(self, method: str, **params: Any) -> Any:
        """Call, log a failure, and go on: a reply that cannot be delivered must not break the turn."""
        try:
            return await self._call(method, **params)
        except TelegramError as exc:
            if "not modified" not in exc.description:
                log.error("Telegram: %s failed: %s", method, exc)
            return None

    async def _call(self, method: str, **params: Any) -> Any:
        """Retry what Telegram asks us to retry (429, 5xx); never a network error, which may have been sent."""
        attempt = 0
        while True:
            try:
                return await self.api.call(method, **params)
            except TelegramError as exc:
                attempt += 1
                if attempt >= 3 or not (exc.status == 429 or exc.status >= 500):
                    raise
                await asyncio.sleep(float(exc.retry_after or 1) if exc.status == 429 else self._backoff_s * 2**attempt)

    async def _load_offset(self) -> int:
        row = await self.db.call(lambda con: con.execute("SELECT value FROM kv WHERE key = ?", (OFFSET_KEY,)).fetchone())
        return int(row[0]) if row else 0

    async def _save_offset(self, offset: int) -> None:
        await self.db.call(lambda con: con.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)",
                                                   (OFFSET_KEY, str(offset))))


def _chat_of(session_key: str) -> int | None:
    prefix, _, chat = session_key.partition(":")
    return int(chat) if prefix == "telegram" and chat.lstrip("-").isdigit() else None
