"""The composition root: the only module that builds and wires every component (DESIGN.md §7, §8)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from edge.agent.turn import Agent
from edge.config import Config, ProviderConfig, secret
from edge.memory.db import Database
from edge.memory.store import Store
from edge.platform.logging import register_secret
from edge.providers.base import FallbackChain, Provider
from edge.providers.ollama import OllamaProvider
from edge.providers.openai import OpenAIProvider
from edge.templates import WORKSPACE_FILES
from edge.tools.files import file_tools
from edge.tools.policy import PolicyGate
from edge.tools.registry import Registry
from edge.tools.shell import shell_tools
from edge.tools.system import system_tools

PROVIDERS = {"ollama": OllamaProvider, "openai": OpenAIProvider}  # literal classes: Nuitka follows them


@dataclass
class Runtime:
    config: Config
    db: Database
    store: Store
    provider: Provider
    registry: Registry
    agent: Agent


def build_provider(config: ProviderConfig) -> Provider:
    api_key = secret(config.api_key_env)
    register_secret(api_key)  # from here on it is scrubbed from every log line and tool output
    return PROVIDERS[config.kind](config, api_key)


def seed_workspace(workspace: Path, overwrite: bool = False) -> list[Path]:
    """Write the template workspace files that are missing; return what was written."""
    workspace.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in WORKSPACE_FILES.items():
        path = workspace / name
        if overwrite or not path.exists():
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


@contextlib.asynccontextmanager
async def runtime(config: Config) -> AsyncIterator[Runtime]:
    """Everything a turn needs, opened in order and closed in reverse."""
    async with contextlib.AsyncExitStack() as stack:
        if not config.workspace.exists():
            seed_workspace(config.workspace)  # the first start gets the templates without `edge init`
        db = await stack.enter_async_context(Database(config.database))
        store = Store(db)
        providers = [build_provider(config.provider), *map(build_provider, config.provider.fallbacks)]
        provider: Provider = providers[0] if len(providers) == 1 else FallbackChain(providers)
        stack.push_async_callback(provider.close)
        tools = [
            *system_tools(config.state_dir),
            *file_tools(config.workspace),
            *shell_tools(config.tools.shell_allow, config.workspace, config.tools.timeout_s),
        ]
        registry = Registry(tools, PolicyGate(config.security), store, config.tools)
        agent = Agent(provider, registry, store, config.agent, config.workspace)
        yield Runtime(config, db, store, provider, registry, agent)
