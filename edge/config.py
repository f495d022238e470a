"""Typed, validated, frozen configuration: embedded defaults < TOML file < EDGE_* environment.

Every component receives its own section (`config.provider`, `config.agent`, ...), never the tree.
Secrets are never read from the TOML: a section names an environment variable (`api_key_env`) and
`secret()` reads it from the environment or from systemd's `$CREDENTIALS_DIRECTORY`.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from edge.config_reader import Degrees, build, env_overrides
from edge.errors import MISSING, ConfigError

Autonomy = Literal["readonly", "supervised", "full"]
SmallModel = Literal["auto", "on", "off"]
ProviderKind = Literal["ollama", "openai"]
ResultChannel = Literal["telegram", "log"]  # where a job's or the heartbeat's result goes; "log" = nowhere else

DEFAULT_SHELL_ALLOW = (
    "date", "uptime", "uname", "df", "free", "ls", "cat", "head", "tail", "wc", "grep",
    "echo", "ping", "ip", "hostname", "whoami", "vcgencmd", "pinctrl", "i2cdetect", "systemctl",
)


@dataclass(frozen=True)
class ProviderConfig:
    kind: ProviderKind = "ollama"
    base_url: str = "http://127.0.0.1:11434"
    model: str = "qwen2.5:3b"
    api_key_env: str = ""  # name of the variable or credential holding the key; never the key
    num_ctx: int = 8192  # upper bound for the context edge asks for; clipped to the model's maximum
    keep_alive: str = "-1"  # an appliance keeps its model loaded; "5m" frees RAM when idle
    think: bool = False
    timeout_s: float = 120.0
    max_retries: int = 3


@dataclass(frozen=True)
class FallbackProviderConfig(ProviderConfig):
    """One entry of `[[provider.fallbacks]]`, tried in order when the primary is unavailable."""


@dataclass(frozen=True)
class PrimaryProviderConfig(ProviderConfig):
    fallbacks: tuple[FallbackProviderConfig, ...] = ()


@dataclass(frozen=True)
class AgentConfig:
    max_tool_iterations: int = 8
    small_model: SmallModel = "auto"
    reply_tokens: int = 1024  # room kept free in the context for the answer
    workspace_budget_tokens: int = 1500  # at most this much of the workspace files goes into the prompt
    max_concurrent_turns: int = 2  # turns in flight across all sessions (one local model serializes anyway)
    interrupt: bool = False  # a new message stops its session's running turn instead of waiting for it
    sender_messages_per_minute: int = 20  # the brake against runaway loops; 0 = no limit


@dataclass(frozen=True)
class GatewayConfig:
    enabled: bool = True
    host: str = "127.0.0.1"  # anything else is refused unless pairing is on
    port: int = 8765
    pairing: bool = True  # clients need a token from POST /pair; off only on loopback
    webhook_secret_env: str = ""  # names the variable holding the HMAC secret for X-Edge-Signature
    requests_per_minute: int = 60  # per client
    pairing_code_ttl_s: float = 3600.0


@dataclass(frozen=True)
class PathsConfig:
    state_dir: str = ""  # "" → $STATE_DIRECTORY under systemd, else ~/.local/state/edge
    workspace: str = ""  # "" → <state_dir>/workspace


@dataclass(frozen=True)
class SecurityConfig:
    autonomy: Autonomy = "supervised"
    approval_timeout_s: float = 120.0


@dataclass(frozen=True)
class MemoryConfig:
    embedding_model: str = ""  # "" = keyword recall only (works offline, out of the box); e.g. "all-minilm"
    embedding_kind: Literal["", "ollama", "openai"] = ""  # "" = the same kind of server as [provider]
    embedding_url: str = ""  # "" = [provider] base_url
    embedding_api_key_env: str = ""
    dims: int = 384
    vector_weight: float = 0.7
    keyword_weight: float = 0.3
    min_relevance: float = 0.4
    top_k: int = 5
    oversample: int = 30  # candidates from the quantized pass per result, re-ranked exactly
    mmr: bool = False  # prefer diverse results over near-duplicates
    mmr_lambda: float = 0.7
    recency_half_life_days: float = 0.0  # 0 = off; else older daily/conversation memories count less
    inject_budget_tokens: int = 400  # most recalled memory that goes into a turn
    history_budget_tokens: int = 0  # a session longer than this is compacted; 0 = ¾ of the room the context leaves
    upkeep_interval_h: float = 6.0  # hygiene, missing vectors and MEMORY_SNAPSHOT.md, this often
    daily_archive_days: int = 30
    archive_purge_days: int = 365
    conversation_retention_days: int = 90


@dataclass(frozen=True)
class LocationConfig:
    latitude: Degrees = 0.0  # type: ignore[assignment]  # with longitude: where "sunrise" and "sunset" are; 0, 0 = not set
    longitude: Degrees = 0.0  # type: ignore[assignment]
    timezone: str = ""  # an IANA name such as "Europe/Berlin"; "" = the system's

    @property
    def has_place(self) -> bool:
        return (self.latitude, self.longitude) != (0.0, 0.0)


@dataclass(frozen=True)
class SchedulerConfig:
    enabled: bool = True
    channel: ResultChannel = "telegram"  # where job results go; "log" = only the run history
    max_concurrent_jobs: int = 2
    retries: int = 2  # a failed run is tried again this many times, after retry_backoff_s, then twice that
    retry_backoff_s: float = 30.0
    disable_after_failures: int = 3  # runs failing in a row (retries included) before the job is turned off
    job_timeout_s: float = 600.0
    history_per_job: int = 50


@dataclass(frozen=True)
class HeartbeatConfig:
    enabled: bool = True
    interval_min: float = 30.0
    active_hours: str = ""  # e.g. "08:00-22:00" in [location] timezone; "" = at any hour
    channel: ResultChannel = "telegram"  # where anything other than HEARTBEAT_OK goes


@dataclass(frozen=True)
class TelegramConfig:
    enabled: bool = True  # runs when the token is there; without one the channel stays off
    token_env: str = "TELEGRAM_BOT_TOKEN"  # names the variable or systemd credential; never the token
    api_base: str = "https://api.telegram.org"
    allowed_users: tuple[str, ...] = ()  # numeric ids or @usernames; empty = everyone must pair
    notify_chat: str = ""  # chat id for notifications (cron, heartbeat, hardware); "" = the first allowed user
    poll_timeout_s: int = 30
    edit_interval_s: float = 1.0  # at most one draft edit a second per chat (Telegram's limit)


@dataclass(frozen=True)
class GpioDeviceConfig:
    name: str = ""
    kind: Literal["output", "pwm", "input", "button", "motion"] = "output"
    pin: int = 0  # BCM number, as printed on Pi pinout diagrams (GPIO17 = 17)
    active_high: bool = True
    initial: float = 0.0  # outputs: 0 = off, 1 = on; pwm: a level from 0 to 1
    description: str = ""
    needs_approval: bool = False  # for outputs that matter: a heater, a lock
    bounce_s: float = 0.05  # inputs: ignore contact bounce shorter than this


@dataclass(frozen=True)
class GpioConfig:
    pin_factory: Literal["auto", "lgpio", "mock"] = "auto"  # auto: lgpio on a Pi, simulated pins elsewhere
    raw_pins: tuple[int, ...] = ()  # pins the model may drive by number, beyond the named devices
    devices: tuple[GpioDeviceConfig, ...] = ()


@dataclass(frozen=True)
class SerialPortConfig:
    name: str = ""
    url: str = ""  # /dev/ttyUSB0, /dev/serial/by-id/..., or a pyserial URL (socket://, loop://)
    baud: int = 9600
    newline: str = "\n"
    encoding: str = "utf-8"
    write_needs_approval: bool = True
    events: bool = False  # publish lines the device sends on its own as events (for triggers)


@dataclass(frozen=True)
class SerialConfig:
    ports: tuple[SerialPortConfig, ...] = ()


@dataclass(frozen=True)
class SensorsConfig:
    onewire_root: str = "/sys/bus/w1/devices"  # where DS18B20 thermometers appear


@dataclass(frozen=True)
class TriggerConfig:
    event: str = ""  # "gpio:doorbell:pressed", "gpio:basement:on", "serial:greenhouse:line"
    match: str = ""  # serial lines: a regular expression the line must contain
    action: Literal["notify", "agent"] = "notify"
    text: str = ""  # the message, or the agent's prompt; {value} is replaced by the event's value
    channel: str = "telegram"  # where the message or the agent's answer goes
    min_interval_s: float = 60.0  # a flapping sensor cannot flood anyone


@dataclass(frozen=True)
class ToolsConfig:
    timeout_s: float = 30.0
    max_result_chars: int = 8000
    shell_allow: tuple[str, ...] = DEFAULT_SHELL_ALLOW


@dataclass(frozen=True)
class LogConfig:
    level: Literal["debug", "info", "warning", "error"] = "info"


@dataclass(frozen=True)
class Config:
    provider: PrimaryProviderConfig = field(default_factory=PrimaryProviderConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    security: SecurityConfig = field(default_factory=SecurityConfig)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    telegram: TelegramConfig = field(default_factory=TelegramConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    gpio: GpioConfig = field(default_factory=GpioConfig)
    serial: SerialConfig = field(default_factory=SerialConfig)
    sensors: SensorsConfig = field(default_factory=SensorsConfig)
    triggers: tuple[TriggerConfig, ...] = ()
    location: LocationConfig = field(default_factory=LocationConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    heartbeat: HeartbeatConfig = field(default_factory=HeartbeatConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    log: LogConfig = field(default_factory=LogConfig)
    source: str = "embedded defaults"  # where the values came from, for messages

    @property
    def state_dir(self) -> Path:
        if self.paths.state_dir:
            return Path(self.paths.state_dir).expanduser()
        if os.environ.get("STATE_DIRECTORY"):  # set by systemd's StateDirectory=
            return Path(os.environ["STATE_DIRECTORY"].split(":")[0])
        return Path.home() / ".local" / "state" / "edge"

    @property
    def workspace(self) -> Path:
        if self.paths.workspace:
            return Path(self.paths.workspace).expanduser()
        return self.state_dir / "workspace"

    @property
    def database(self) -> Path:
        return self.state_dir / "edge.db"


def search_paths() -> list[Path]:
    """Where a config is looked for, first match wins (DESIGN.md, "Interfaces")."""
    paths = [Path("edge.toml"), Path.home() / ".config" / "edge" / "edge.toml", Path("/etc/edge/edge.toml")]
    if os.environ.get("EDGE_CONFIG"):
        paths.insert(0, Path(os.environ["EDGE_CONFIG"]))
    return paths


def find_config(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit)
    return next((p for p in search_paths() if p.is_file()), None)


def load(explicit_path: str | None = None, environ: typing.Mapping[str, str] | None = None) -> Config:
    """Read, merge and validate the configuration; raise ConfigError naming file, key and expectation."""
    environ = os.environ if environ is None else environ
    path = find_config(explicit_path)
    data: dict[str, Any] = {}
    source = "embedded defaults"
    if path is not None:
        source = str(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(source, "(file)", MISSING, "an existing TOML file (create one with `edge init`)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(source, "(file)", str(exc), "a readable UTF-8 TOML file") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(source, "(syntax)", str(exc), "valid TOML") from None
    overrides = env_overrides(environ)
    for section, values in overrides.items():
        target = data.setdefault(section, {})
        if not isinstance(target, dict):
            raise ConfigError(source, f"[{section}]", target, "a table")
        target.update(values)
    config = build(Config, data, source)
    _check_gateway(config.gateway, source)
    _check_hardware(config, source)
    _check_schedules(config, source)
    return dataclasses.replace(config, source=source)


def _check_gateway(gateway: GatewayConfig, source: str) -> None:
    if not gateway.pairing and gateway.host not in ("127.0.0.1", "::1", "localhost"):
        raise ConfigError(source, "[gateway] pairing", False,
                          f"true when [gateway] host is {gateway.host!r}: an open gateway off loopback lets anyone in")
    if not 0 < gateway.port < 65536:
        raise ConfigError(source, "[gateway] port", gateway.port, "a port number from 1 to 65535")


def _check_hardware(config: Config, source: str) -> None:
    """What the types cannot say: names unique and present, a pin used once, values in range."""
    names: set[str] = set()
    pins: dict[int, str] = {}
    for index, device in enumerate(config.gpio.devices):
        key = f"[[gpio.devices]] #{index + 1}"
        if not device.name or device.name in names:
            raise ConfigError(source, f"{key} name", device.name, "a name no other device has")
        if not 0 <= device.pin <= 27:
            raise ConfigError(source, f"{key} pin", device.pin, "a BCM GPIO number from 0 to 27")
        if device.pin in pins:
            raise ConfigError(source, f"{key} pin", device.pin, f"a pin no other device uses ({pins[device.pin]!r} has it)")
        if not 0.0 <= device.initial <= 1.0:
            raise ConfigError(source, f"{key} initial", device.initial, "a level from 0 to 1")
        names.add(device.name)
        pins[device.pin] = device.name
    ports: set[str] = set()
    for index, port in enumerate(config.serial.ports):
        key = f"[[serial.ports]] #{index + 1}"
        if not port.name or port.name in ports:
            raise ConfigError(source, f"{key} name", port.name, "a name no other port has")
        if not port.url:
            raise ConfigError(source, f"{key} url", port.url, "the device path, e.g. /dev/ttyUSB0")
        ports.add(port.name)
    for index, trigger in enumerate(config.triggers):
        kind, _, rest = trigger.event.partition(":")
        name = rest.partition(":")[0]
        if (kind, name) not in {("gpio", n) for n in names} | {("serial", p) for p in ports}:
            raise ConfigError(source, f"[[triggers]] #{index + 1} event", trigger.event,
                              "gpio:<device>:<event> or serial:<port>:line for a configured device or port")


def _check_schedules(config: Config, source: str) -> None:
    import re

    location = config.location
    if not -90 <= location.latitude <= 90:
        raise ConfigError(source, "[location] latitude", location.latitude, "degrees from -90 to 90")
    if location.timezone:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(location.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(source, "[location] timezone", location.timezone,
                              'an IANA time zone such as "Europe/Berlin" (see `timedatectl list-timezones`)') from None
    hours = config.heartbeat.active_hours
    if hours and not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d-([01]\d|2[0-4]):[0-5]\d", hours):
        raise ConfigError(source, "[heartbeat] active_hours", hours, '"HH:MM-HH:MM", e.g. "08:00-22:00", or ""')


def secret(variable: str, environ: typing.Mapping[str, str] | None = None) -> str | None:
    """The value of a secret: the environment first, then a systemd credential of that name."""
    if not variable:
        return None
    environ = os.environ if environ is None else environ
    if environ.get(variable):
        return environ[variable]
    cred_dir = environ.get("CREDENTIALS_DIRECTORY")
    if cred_dir:
        # One credential per secret, or (systemd/edge.service) a directory loaded as "edge_<file name>".
        for name in (variable, f"edge_{variable}"):
            path = Path(cred_dir) / name
            if path.is_file():
                return path.read_text(encoding="utf-8").strip()
    return None
