"""Slash commands a user can type in any chat channel; answered by edge itself, never by the model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from edge.agent.context import context_ceiling, is_small_model
from edge.errors import EdgeError

if TYPE_CHECKING:
    from edge.app import Runtime

HELP = """\
/help          this list
/new           start a fresh conversation (the old one stays in the database)
/stop          stop the answer being written
/model [NAME]  show the model, or switch to another one
/tools         the tools the model can use now
/status        model, session, tokens used, autonomy"""


@dataclass
class CommandContext:
    runtime: Runtime
    session_key: str
    stop_turn: Callable[[], bool]  # cancels the running turn; False when none was running


def is_command(text: str) -> bool:
    return text.startswith("/") and text[1:2].isalpha()


async def handle(text: str, ctx: CommandContext) -> str:
    name, _, argument = text.strip().partition(" ")
    handler = _COMMANDS.get(name.lower())
    if handler is None:
        return f"Unknown command {name}. Commands:\n{HELP}"
    return await handler(ctx, argument.strip())


async def _help(ctx: CommandContext, argument: str) -> str:
    return HELP


async def _new(ctx: CommandContext, argument: str) -> str:
    await ctx.runtime.store.new_session(ctx.session_key)
    return "Started a new conversation."


async def _stop(ctx: CommandContext, argument: str) -> str:
    return "Stopped." if ctx.stop_turn() else "Nothing is running."


async def _model(ctx: CommandContext, argument: str) -> str:
    provider = ctx.runtime.provider
    if argument:
        provider.use_model(argument)
    try:
        info = await provider.info()
    except EdgeError as exc:
        return f"Model: {provider.config.model} — {exc}"
    small = is_small_model(ctx.runtime.config.agent, info)
    size = f"{info.parameters_b:g}B parameters" if info.parameters_b else "size unknown"
    tools = "native tool calls" if info.native_tools else "tool calls parsed from text"
    return (f"Model: {info.model} at {provider.label} ({size}; context up to "
            f"{context_ceiling(provider.config, info)} tokens; {tools}; small-model mode {'on' if small else 'off'})")


async def _tools(ctx: CommandContext, argument: str) -> str:
    try:
        small = is_small_model(ctx.runtime.config.agent, await ctx.runtime.provider.info())
    except EdgeError:
        small = ctx.runtime.config.agent.small_model == "on"
    lines = [f"- {t.name} ({t.risk} risk): {t.summary}" for t in ctx.runtime.registry.offered(small)]
    return "Tools:\n" + "\n".join(lines)


async def _status(ctx: CommandContext, argument: str) -> str:
    runtime = ctx.runtime
    session = await runtime.store.current_session(ctx.session_key)
    turns, prompt, completion = await runtime.store.usage_totals()
    return (f"Model: {runtime.provider.config.model} ({runtime.provider.label})\n"
            f"Session: {session}\n"
            f"Turns: {turns}, tokens: {prompt} in / {completion} out\n"
            f"Autonomy: {runtime.config.security.autonomy}\n"
            f"Workspace: {runtime.config.workspace}")


_COMMANDS = {"/help": _help, "/start": _help, "/new": _new, "/stop": _stop, "/model": _model, "/tools": _tools,
             "/status": _status}
