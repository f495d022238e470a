"""`edge ...` commands (argparse) — the entry point of the console script and of the standalone build.

Heavy modules are imported inside each command, so `edge --help` and `edge version` start instantly.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from edge import __version__
from edge.errors import ConfigError, EdgeError


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="PATH", help="config file (default: $EDGE_CONFIG, ./edge.toml, "
                        "~/.config/edge/edge.toml, /etc/edge/edge.toml)")
    parser = argparse.ArgumentParser(prog="edge", description="A personal AI agent for a Raspberry Pi.", parents=[common])
    parser.add_argument("--version", action="version", version=f"edge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    init = sub.add_parser("init", parents=[common], help="write a commented config and the workspace templates")
    init.add_argument("--force", action="store_true", help="overwrite files that exist")
    agent = sub.add_parser("agent", parents=[common], help="one turn: print the answer to a message")
    agent.add_argument("-m", "--message", required=True, help="the message")
    agent.add_argument("--session", default="cli:agent", help="conversation to continue (default: %(default)s)")
    sub.add_parser("chat", parents=[common], help="talk to edge in the terminal")
    sub.add_parser("run", parents=[common], help="run the daemon: agent, gateway, watchdog (for systemd)")
    pair = sub.add_parser("pair", parents=[common], help="a fresh pairing code for a new client; "
                          "`edge pair approve CODE` lets in a Telegram sender")
    pair.add_argument("action", nargs="?", choices=["approve"], help="approve a code a Telegram sender was given")
    pair.add_argument("code", nargs="?", help="the code to approve")
    sub.add_parser("status", parents=[common], help="ask the running daemon how it is")
    sub.add_parser("doctor", parents=[common], help="check provider, model, workspace, disk, clock, hardware access")
    gpio = sub.add_parser("gpio", parents=[common], help="list, read or switch the configured GPIO devices")
    gpio.add_argument("action", choices=["list", "read", "write"])
    gpio.add_argument("name", nargs="?", help="the device's name (read, write)")
    gpio.add_argument("value", nargs="?", help="on, off, or a level from 0 to 1 (write)")
    serial = sub.add_parser("serial", parents=[common], help="list the serial ports, or send a line and print the answer")
    serial.add_argument("action", choices=["list", "send"])
    serial.add_argument("name", nargs="?", help="the port's name (send)")
    serial.add_argument("text", nargs="?", help="the line to send (send)")
    serial.add_argument("--wait", type=float, default=2.0, help="seconds to wait for an answer (default: 2)")
    memory = sub.add_parser("memory", parents=[common], help="search, add, forget, export, import or reindex the "
                            "long-term memories; stats")
    memory.add_argument("action", choices=["search", "add", "forget", "export", "import", "reindex", "stats"])
    memory.add_argument("text", nargs="?", help="search: the query; add: the fact; forget: its number or key; "
                        "export: a file (default stdout); import: a JSON export or MEMORY_SNAPSHOT.md")
    memory.add_argument("--key", help="add: a name; adding the same key again replaces the fact")
    memory.add_argument("--category", choices=["core", "daily"], default="core", help="add: core (default) or daily")
    memory.add_argument("--top", type=int, help="search: how many results (default: [memory] top_k)")
    cron = sub.add_parser("cron", parents=[common], help="list, add, remove or run scheduled jobs; their history")
    cron_actions = cron.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = cron_actions.add_parser("list", parents=[common], help="the jobs and their next run")
    listing.add_argument("--all", action="store_true", help="also one-shot jobs that have run")
    add = cron_actions.add_parser("add", parents=[common], help="add a job", epilog='examples: edge cron add '
                                  '"0 7 * * 1-5" "Good morning"; edge cron add sunset "Porch light on?" --kind agent')
    add.add_argument("schedule", help='"0 7 * * *", "@daily", "every 30m", "at 07:30", "in 20m", "sunset-15m"')
    add.add_argument("text", help="the message (notify), the prompt (agent) or the command (shell)")
    add.add_argument("--kind", choices=["notify", "agent", "shell"], default="notify")
    add.add_argument("--name", help="a short name (default: the start of the text)")
    add.add_argument("--channel", choices=["telegram", "log"], help="where the result goes ([scheduler] channel)")
    add.add_argument("--chat", help="which Telegram chat (a chat id; default: [telegram] notify_chat)")
    add.add_argument("--catch-up", action=argparse.BooleanOptionalAction, default=None,
                     help="run once at start if a run was missed while edge was off (default: only for `at`)")
    for action, text in (("remove", "remove a job"), ("run", "run a job now, here, and print its result"),
                         ("history", "a job's last runs")):
        cron_actions.add_parser(action, parents=[common], help=text).add_argument("job", help="its number or name")
    service = sub.add_parser("service", parents=[common], help="install or remove edge as a system service")
    service_actions = service.add_subparsers(dest="action", metavar="ACTION", required=True)
    setup = service_actions.add_parser("install", parents=[common], help="install or upgrade: the build in "
                                       "/opt/edge, the unit, /etc/edge/edge.toml if absent, the edge user")
    setup.add_argument("--dist", help="the standalone build to install (default: the one this edge runs from)")
    setup.add_argument("--with-config", metavar="FILE", help="install this edge.toml (default: keep, or the template)")
    setup.add_argument("--secrets", metavar="FILE", help="NAME=value lines to move into /etc/edge/credentials")
    setup.add_argument("--enable", action="store_true", help="start now and at every boot")
    remove = service_actions.add_parser("uninstall", parents=[common], help="remove the program and the unit")
    remove.add_argument("--purge", action="store_true", help="also remove /etc/edge and the state in /var/lib/edge")
    for action_parser in (setup, remove):
        action_parser.add_argument("--root", default="/", help="install into this directory instead of / "
                                   "(an image being prepared); system commands are then listed, not run")
    sub.add_parser("version", parents=[common], help="print the version")
    return parser


def main(argv: list[str] | None = None) -> int:
    from edge.platform.tls import load_ca_on_demand

    load_ca_on_demand()  # before anything imports aiohttp
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 0
    if args.command == "version":
        print(f"edge {__version__}")
        return 0
    try:
        return _COMMANDS[args.command](args)
    except ConfigError as exc:
        print(f"edge: configuration error: {exc}", file=sys.stderr)
        return 2
    except EdgeError as exc:
        print(f"edge: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _load(args: argparse.Namespace, interactive: bool = False):  # type: ignore[no-untyped-def]
    from edge import config
    from edge.platform import logging

    loaded = config.load(args.config)
    # In a terminal the answer already says what went wrong; only errors (or debugging) add to it.
    logging.setup("error" if interactive and loaded.log.level != "debug" else loaded.log.level)
    return loaded


def _run(coroutine_factory: Callable[[Any], Coroutine[Any, Any, int]], args: argparse.Namespace,
         interactive: bool = True) -> int:
    """Open the runtime (database, provider, tools) on uvloop, run one command, close it all."""
    from edge.app import runtime

    config = _load(args, interactive)

    async def go() -> int:
        async with runtime(config) as rt:
            return await coroutine_factory(rt)

    return _on_uvloop(go())


def _on_uvloop(coroutine: Coroutine[Any, Any, int]) -> int:
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def _init(args: argparse.Namespace) -> int:
    from edge import config
    from edge.app import seed_workspace
    from edge.templates import CONFIG_TOML

    target = Path(args.config) if args.config else Path.home() / ".config" / "edge" / "edge.toml"
    if target.exists() and not args.force:
        print(f"kept    {target} (exists; --force to overwrite)")
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(CONFIG_TOML, encoding="utf-8")
        print(f"wrote   {target}")
    loaded = config.load(str(target))
    written = seed_workspace(loaded.workspace, overwrite=args.force)
    for name in sorted(p.name for p in loaded.workspace.iterdir() if p.suffix == ".md"):
        path = loaded.workspace / name
        print(f"{'wrote' if path in written else 'kept':<7} {path}")
    print(f"\nNext: edit {target}, then `edge doctor` and `edge chat`.")
    return 0


def _agent(args: argparse.Namespace) -> int:
    from edge.channels.cli import one_shot

    return _run(lambda rt: one_shot(rt, args.message, args.session), args)


def _chat(args: argparse.Namespace) -> int:
    from edge.channels.cli import Chat

    return _run(lambda rt: Chat(rt).run(), args)


def _doctor(args: argparse.Namespace) -> int:
    from edge.doctor import render, run_checks

    async def doctor(rt: Any) -> int:
        checks = await run_checks(rt)
        print(render(checks))
        return 0 if all(c.ok for c in checks) else 1

    return _run(doctor, args)


def _daemon(args: argparse.Namespace) -> int:
    import logging
    import os
    import signal

    from edge.app import serve
    from edge.platform.systemd import Notifier

    config = _load(args)
    notifier = Notifier()

    async def go() -> int:
        main = asyncio.current_task()
        assert main is not None
        loop = asyncio.get_running_loop()

        def stop(name: str) -> None:
            if main.cancelling():
                return
            logging.getLogger("edge.run").info("%s: stopping", name)
            notifier.stopping()
            main.cancel()
            # Whatever hangs, the process is gone within 5 s: systemd would otherwise wait for TimeoutStopSec.
            loop.call_later(4.5, os._exit, 1)

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop, sig.name)
        try:
            await serve(config, notifier)
        except asyncio.CancelledError:
            if not main.cancelling():
                raise
        return 0

    try:
        return _on_uvloop(go())
    finally:
        notifier.close()


def _pair(args: argparse.Namespace) -> int:
    from edge.gateway.auth import new_pairing_code
    from edge.memory.db import Database

    config = _load(args, interactive=True)
    if args.action == "approve":
        return _approve_sender(config, args.code or "")

    async def go() -> int:
        async with Database(config.database) as db:
            code = await new_pairing_code(db, config.gateway.pairing_code_ttl_s)
        print(f"One-time pairing code, valid {config.gateway.pairing_code_ttl_s / 60:.0f} min "
              "(web chat: enter it; API: POST /pair with X-Pairing-Code):", file=sys.stderr)
        print(code)
        return 0

    return asyncio.run(go())


def _approve_sender(config: Any, code: str) -> int:
    from edge.channels.telegram_senders import approve
    from edge.memory.db import Database

    async def go() -> int:
        async with Database(config.database) as db:
            approved = await approve(db, code)
        if approved is None:
            print(f"edge: no pending sender has the code {code!r} (codes expire after a day; "
                  "the sender gets a new one by writing to the bot again)", file=sys.stderr)
            return 1
        print(f"approved Telegram user {approved[0]}" + (f" (@{approved[1]})" if approved[1] else "")
              + "; they are told on the daemon's next poll")
        return 0

    return asyncio.run(go())


def _status(args: argparse.Namespace) -> int:
    import json
    import urllib.error
    import urllib.request

    config = _load(args, interactive=True)
    host = "127.0.0.1" if config.gateway.host in ("0.0.0.0", "::", "") else config.gateway.host
    url = f"http://{host}:{config.gateway.port}/health"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
    except urllib.error.HTTPError as exc:  # 503 still carries the component list
        body = json.load(exc)
    except (OSError, ValueError) as exc:
        print(f"edge is not running (or not at {url}): {exc}", file=sys.stderr)
        return 1
    print(f"edge {body.get('version')}: {body.get('status')}, up {body.get('uptime_s', 0):.0f} s")
    for name, component in body.get("components", {}).items():
        print(f"  {name:<10} {component['status']:<8} restarts {component['restarts']}")
    return 0 if body.get("status") == "ok" else 1


def _gpio(args: argparse.Namespace) -> int:
    from edge.hardware.gpio import GpioBoard

    config = _load(args, interactive=True)
    if not config.gpio.devices:
        print("No GPIO devices are configured: add [[gpio.devices]] to the config.", file=sys.stderr)
        return 1
    board = GpioBoard(config.gpio, None)  # a HardwareError (pins held by `edge run`?) is reported by main()
    try:
        if args.action == "list":
            for name, (device, _) in board.devices.items():
                print(board.describe(name) + (f": {device.description}" if device.description else ""))
        elif args.action == "read":
            print(board.describe(args.name or ""))
        else:
            if not args.name or not args.value:
                print("usage: edge gpio write NAME on|off|LEVEL", file=sys.stderr)
                return 2
            print(board.write(args.name, args.value))
        if board.simulated:
            print("(pins are simulated on this machine)", file=sys.stderr)
        return 0
    finally:
        board.close()


def _serial(args: argparse.Namespace) -> int:
    import os

    from edge.hardware.serial import SerialPort

    config = _load(args, interactive=True)
    ports = {port.name: port for port in config.serial.ports}
    if args.action == "list":
        for port in ports.values():
            present = "present" if "://" in port.url or os.path.exists(port.url) else "not plugged in"
            print(f"{port.name:<14} {port.url} ({port.baud} baud, {present})")
        return 0 if ports else 1
    if args.name not in ports or args.text is None:
        print(f"usage: edge serial send NAME TEXT; the ports are: {', '.join(ports) or 'none configured'}", file=sys.stderr)
        return 2

    async def go() -> int:
        port = SerialPort(ports[args.name], None)
        watcher = asyncio.create_task(port.run(lambda: None))
        try:
            await asyncio.wait_for(port.first_attempt.wait(), 5)
            print(await port.query(args.text, args.wait))
            return 0
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)

    return asyncio.run(go())


def _memory(args: argparse.Namespace) -> int:
    from edge.memory import cli

    return _on_uvloop(cli.run(_load(args, interactive=True), args))


def _cron(args: argparse.Namespace) -> int:
    from edge.scheduler import cli

    return _on_uvloop(cli.run(_load(args, interactive=True), args))


def _service(args: argparse.Namespace) -> int:
    from edge.platform import install

    root = Path(args.root)
    if args.action == "uninstall":
        plan = install.uninstall(root, args.purge)
        verb = "removed"
    else:
        dist = Path(args.dist) if args.dist else Path(sys.argv[0]).resolve().parent
        plan = install.install(root, dist, Path(args.with_config) if args.with_config else None,
                               Path(args.secrets) if args.secrets else None, args.enable)
        verb = "installed"
    for path in plan.written:
        print(f"{verb:<9} {path}")
    ran = plan.root.resolve() == Path("/")
    for command in plan.commands:
        print(f"{'ran' if ran else 'on the device, run':<9} {' '.join(command)}")
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "init": _init, "agent": _agent, "chat": _chat, "doctor": _doctor, "run": _daemon, "pair": _pair, "status": _status,
    "gpio": _gpio, "serial": _serial, "memory": _memory, "cron": _cron, "service": _service,
}
