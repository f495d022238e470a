"""The composition root: the only module that builds and wires every component (DESIGN.md §7, §8)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from edge.agent.loop import AgentLoop
from edge.agent.turn import Agent
from edge.bus import Bus
from edge.channels.base import ReplyStreams
from edge.config import Config, ProviderConfig, secret
from edge.errors import EdgeError
from edge.hardware.events import EventQueue, Triggers
from edge.hardware.gpio import GpioBoard
from edge.hardware.serial import SerialPort
from edge.memory.db import Database
from edge.memory.embed import Embedder
from edge.memory.memories import SNAPSHOT_NAME, Memories
from edge.memory.store import Store
from edge.memory.upkeep import MemoryUpkeep
from edge.metrics import Counters
from edge.platform.logging import register_secret
from edge.platform.systemd import LoopMonitor, Notifier
from edge.providers.base import FallbackChain, Provider
from edge.providers.ollama import OllamaProvider
from edge.providers.openai import OpenAIProvider
from edge.scheduler.cron import CHANNEL as SCHEDULER_CHANNEL
from edge.scheduler.cron import Scheduler
from edge.scheduler.heartbeat import Heartbeat
from edge.scheduler.jobs import Jobs
from edge.scheduler.schedule import Place
from edge.supervise import ComponentHealth, Health, Service, supervise
from edge.templates import WORKSPACE_FILES
from edge.tools.base import Tool
from edge.tools.files import file_tools
from edge.tools.gpio import gpio_tools
from edge.tools.memory import memory_tools
from edge.tools.notify import notify_tools
from edge.tools.policy import PolicyGate
from edge.tools.registry import Registry
from edge.tools.schedule import schedule_tools
from edge.tools.sensors import sensor_tools
from edge.tools.serial import serial_tools
from edge.tools.shell import shell_tools
from edge.tools.system import system_tools

log = logging.getLogger(__name__)
PROVIDERS = {"ollama": OllamaProvider, "openai": OpenAIProvider}  # literal classes: Nuitka follows them


@dataclass
class Hardware:
    gpio: GpioBoard | None
    ports: dict[str, SerialPort]
    events: EventQueue


@dataclass
class Runtime:
    config: Config
    db: Database
    store: Store
    provider: Provider
    registry: Registry
    agent: Agent
    hardware: Hardware
    memories: Memories
    jobs: Jobs


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
async def runtime(config: Config, extra_tools: Sequence[Tool] = ()) -> AsyncIterator[Runtime]:
    """Everything a turn needs, opened in order and closed in reverse."""
    async with contextlib.AsyncExitStack() as stack:
        if not config.workspace.exists():
            seed_workspace(config.workspace)  # the first start gets the templates without `edge init`
        db = await stack.enter_async_context(Database(config.database))
        store = Store(db)
        providers = [build_provider(config.provider), *map(build_provider, config.provider.fallbacks)]
        provider: Provider = providers[0] if len(providers) == 1 else FallbackChain(providers)
        stack.push_async_callback(provider.close)
        hardware = await stack.enter_async_context(_hardware(config))
        onewire = Path(config.sensors.onewire_root)
        has_onewire = await asyncio.to_thread(onewire.is_dir)  # the 1-Wire interface is enabled on this board
        tools = [
            *system_tools(config.state_dir),
            *file_tools(config.workspace),
            *shell_tools(config.tools.shell_allow, config.workspace, config.tools.timeout_s),
            *(gpio_tools(hardware.gpio) if hardware.gpio else ()),
            *(serial_tools(hardware.ports) if hardware.ports else ()),
            *(sensor_tools(onewire) if has_onewire else ()),
            *extra_tools,
        ]
        memories = await open_memories(config, db, stack)
        tools.extend(memory_tools(memories))
        jobs = Jobs(db, Place.from_config(config.location), config.scheduler.history_per_job)
        if config.scheduler.enabled:
            tools.extend(schedule_tools(jobs, config.scheduler.channel))
        registry = Registry(tools, PolicyGate(config.security), store, config.tools)
        agent = Agent(provider, registry, store, config.agent, config.workspace, memories, config.memory)
        stack.push_async_callback(agent.close)
        yield Runtime(config, db, store, provider, registry, agent, hardware, memories, jobs)


async def open_memories(config: Config, db: Database, stack: contextlib.AsyncExitStack) -> Memories:
    """Long-term memory: vectors when an embedding model is configured, keywords always; a restored Pi
    gets its memories back from MEMORY_SNAPSHOT.md when the database is empty."""
    memory = config.memory
    embedder = None
    if memory.embedding_model:
        settings = ProviderConfig(kind=memory.embedding_kind or config.provider.kind,
                                  base_url=memory.embedding_url or config.provider.base_url,
                                  api_key_env=memory.embedding_api_key_env or config.provider.api_key_env,
                                  model=memory.embedding_model, timeout_s=30.0, max_retries=1)
        embedder = Embedder(build_provider(settings), memory.embedding_model, memory.dims, db)
        stack.push_async_callback(embedder.provider.close)
    memories = Memories(db, embedder, memory)
    await memories.open()
    restored = await memories.hydrate(config.workspace / SNAPSHOT_NAME)
    if restored:
        log.info("memory: %d memories restored from %s", restored, SNAPSHOT_NAME)
    return memories


@contextlib.asynccontextmanager
async def _hardware(config: Config) -> AsyncIterator[Hardware]:
    """GPIO devices (gpiozero only when some are configured), and serial ports watched in the background."""
    events = EventQueue(asyncio.get_running_loop())
    board = GpioBoard(config.gpio, events) if config.gpio.devices or config.gpio.raw_pins else None
    ports = {port.name: SerialPort(port, events) for port in config.serial.ports}
    watchers = [asyncio.create_task(port.run(lambda: None), name=f"serial:{name}") for name, port in ports.items()]
    try:
        if ports:  # a one-shot turn should find a plugged-in device connected, not "not opened yet"
            await asyncio.wait([asyncio.create_task(p.first_attempt.wait()) for p in ports.values()], timeout=5)
        yield Hardware(board, ports, events)
    finally:
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
        if board is not None:
            board.close()


async def serve(config: Config, notifier: Notifier) -> None:
    """`edge run`: every service under supervise() in one TaskGroup, until cancelled (the stop signal)."""
    health, counters, bus = Health(), Counters(), Bus()
    telegram_token = secret(config.telegram.token_env) if config.telegram.enabled else None
    register_secret(telegram_token)
    if config.telegram.enabled and not telegram_token:
        log.info("Telegram is off: no bot token in $%s (or a credential of that name)", config.telegram.token_env)
    async with runtime(config, notify_tools(bus, "telegram") if telegram_token else ()) as rt:
        monitor = LoopMonitor(notifier)
        services: dict[str, Service] = {
            "watchdog": monitor.run,
            "agent": AgentLoop(bus, rt, config.agent, counters).run,
        }
        services["memory"] = MemoryUpkeep(rt.memories, config.workspace / SNAPSHOT_NAME,
                                          config.memory.upkeep_interval_h * 3600).run
        if config.scheduler.enabled or config.heartbeat.enabled:
            streams = ReplyStreams(SCHEDULER_CHANNEL, bus)  # agent jobs and heartbeats are turns like any other
            if config.scheduler.enabled:
                services["scheduler"] = Scheduler(rt.jobs, config.scheduler, bus, streams, rt.registry).run
            if config.heartbeat.enabled:
                services["heartbeat"] = Heartbeat(config.heartbeat, config.workspace, bus, streams,
                                                  rt.jobs.place.zone).run
        if config.gateway.enabled:
            services["gateway"] = await _gateway(config, rt, bus, health, counters, monitor)
        if telegram_token:
            from edge.channels.telegram import TelegramChannel

            services["telegram"] = TelegramChannel(config.telegram, telegram_token, bus, rt.db).run
        if rt.hardware.gpio or rt.hardware.ports:
            services["triggers"] = Triggers(config.triggers, rt.hardware.events, bus).run
        for name, port in rt.hardware.ports.items():
            _mirror_port_health(port, health.component(f"serial:{name}"))
        async with asyncio.TaskGroup() as group:
            for name, service in services.items():
                group.create_task(supervise(name, service, health), name=name)
            group.create_task(_announce(rt, health, notifier), name="announce")


def _mirror_port_health(port: SerialPort, state: ComponentHealth) -> None:
    """A serial device that is unplugged shows as failed in /health and `edge status`, with the reason."""
    port.on_state = lambda connected, error: state.set("up") if connected else state.set("failed", error)
    if port.first_attempt.is_set():
        port.on_state(port.connected, port.last_error)


async def _gateway(config: Config, rt: Runtime, bus: Bus, health: Health, counters: Counters,
                   monitor: LoopMonitor) -> Service:
    from edge.gateway.auth import Clients, new_pairing_code
    from edge.gateway.server import Gateway

    clients = Clients(rt.db, config.gateway)
    await clients.load()
    webhook_secret = secret(config.gateway.webhook_secret_env)
    register_secret(webhook_secret)
    gateway = Gateway(config.gateway, bus, clients, health, counters, monitor, lambda: rt.provider.config.model,
                      webhook_secret)
    if config.gateway.pairing:
        code = await new_pairing_code(rt.db, config.gateway.pairing_code_ttl_s)
        minutes = config.gateway.pairing_code_ttl_s / 60
        log.info("pairing code for a new client (POST /pair, X-Pairing-Code; valid %.0f min; `edge pair` makes another):",
                 minutes)
        print(code, flush=True)  # alone on its own line, so a script or a person can pick it out
    return gateway.run


async def _announce(rt: Runtime, health: Health, notifier: Notifier) -> None:
    """READY=1 once every service has come up or failed once; then STATUS= whenever it changes."""
    await asyncio.gather(*(c.settled.wait() for c in health.components.values()))
    notifier.ready(health.summary())
    log.info("edge is ready: %s", health.summary())
    try:
        await rt.provider.warm()  # the first answer should not wait for the model to load
    except EdgeError as exc:
        log.warning("could not preload the model: %s", exc)
    shown = health.summary()
    while True:
        await asyncio.sleep(5)
        if health.summary() != shown:
            shown = health.summary()
            notifier.status(shown)
