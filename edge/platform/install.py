"""`edge service install|uninstall` (and `make install`): edge as a system service under a root directory.

Files: the standalone build in /opt/edge (the one before it kept as /opt/edge.previous, for rollback),
the unit in /etc/systemd/system, /etc/edge/edge.toml if absent, /etc/edge/credentials/ for secrets
(root only), /var/lib/edge for the state. System changes (the `edge` user, systemctl) are commands run
only when the root is "/"; with another root (a test, an image being prepared) they are listed instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from edge.errors import EdgeError
from edge.templates import CONFIG_TOML

USER = "edge"
# The service's state, also for `edge` commands run by hand (`sudo -u edge /opt/edge/edge doctor`).
INSTALLED_CONFIG = CONFIG_TOML.replace('state_dir = ""           ', 'state_dir = "/var/lib/edge"', 1)
_SECRET_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


class InstallError(EdgeError):
    """Installing or removing the service failed; the message says what to fix."""


@dataclass
class Plan:
    root: Path
    written: list[str] = field(default_factory=list)  # paths, as they will be on the device
    commands: list[list[str]] = field(default_factory=list)  # system changes, run only when root is "/"

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def note(self, absolute: str) -> None:
        self.written.append(absolute)


def install(root: Path, dist: Path, config_file: Path | None = None, secrets_file: Path | None = None,
            enable: bool = False) -> Plan:
    """Install (or upgrade) the service. `secrets_file`: NAME=value lines, moved into credentials and deleted."""
    if not (dist / "edge").is_file() or not (dist / "edge.service").is_file():
        raise InstallError(f"{dist} is not a standalone build of edge (no edge and edge.service in it): "
                           "run `make build`, then install from build/dist/edge")
    plan = Plan(root)
    _install_dist(plan, dist)
    unit = plan.path("/etc/systemd/system/edge.service")
    unit.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(dist / "edge.service", unit)
    plan.note("/etc/systemd/system/edge.service")
    config = plan.path("/etc/edge/edge.toml")
    config.parent.mkdir(parents=True, exist_ok=True)
    if config_file is not None:
        shutil.copyfile(config_file, config)
        plan.note("/etc/edge/edge.toml")
    elif not config.exists():  # an upgrade never overwrites the owner's settings
        config.write_text(INSTALLED_CONFIG, encoding="utf-8")
        plan.note("/etc/edge/edge.toml")
    config.chmod(0o644)
    credentials = plan.path("/etc/edge/credentials")
    credentials.mkdir(mode=0o700, exist_ok=True)
    credentials.chmod(0o700)
    if secrets_file is not None:
        _move_secrets(plan, secrets_file, credentials)
    plan.path("/var/lib/edge").mkdir(parents=True, exist_ok=True)
    plan.commands += [
        ["sh", "-c", f"getent group gpio >/dev/null || groupadd --system gpio; "
                     f"getent group dialout >/dev/null || groupadd --system dialout; "
                     f"id -u {USER} >/dev/null 2>&1 || useradd --system --home-dir /var/lib/edge "
                     f"--shell /usr/sbin/nologin --groups gpio,dialout {USER}"],
        ["systemctl", "daemon-reload"],
    ]
    if enable:
        plan.commands.append(["systemctl", "enable", "--now", "edge.service"])
    else:
        plan.commands.append(["systemctl", "try-restart", "edge.service"])  # an upgrade takes effect now
    _run(plan)
    return plan


def uninstall(root: Path, purge: bool = False) -> Plan:
    """Remove the program and the unit; the state, config and secrets stay unless `purge`."""
    plan = Plan(root)
    plan.commands.append(["sh", "-c", "systemctl disable --now edge.service 2>/dev/null || true"])
    _run(plan)  # stop it before its files go
    plan.commands.clear()
    removed = ["/opt/edge", "/opt/edge.previous", "/etc/systemd/system/edge.service"]
    if purge:
        removed += ["/etc/edge", "/var/lib/edge"]
    for absolute in removed:
        target = plan.path(absolute)
        if target.is_dir():
            shutil.rmtree(target)
            plan.note(absolute)
        elif target.exists():
            target.unlink()
            plan.note(absolute)
    plan.commands.append(["systemctl", "daemon-reload"])
    if purge:
        plan.commands.append(["sh", "-c", f"id -u {USER} >/dev/null 2>&1 && userdel {USER} || true"])
    _run(plan)
    return plan


def _install_dist(plan: Plan, dist: Path) -> None:
    """Copy next to the old build, then swap: a failed copy (full disk) leaves the running one intact."""
    target, fresh, previous = plan.path("/opt/edge"), plan.path("/opt/edge.new"), plan.path("/opt/edge.previous")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(fresh, ignore_errors=True)
    try:
        shutil.copytree(dist, fresh, symlinks=True)
    except OSError as exc:
        shutil.rmtree(fresh, ignore_errors=True)
        raise InstallError(f"cannot copy the build to {target} ({exc}); nothing was changed") from exc
    if target.exists():
        shutil.rmtree(previous, ignore_errors=True)
        target.rename(previous)
    fresh.rename(target)
    plan.note("/opt/edge")


def _move_secrets(plan: Plan, secrets_file: Path, credentials: Path) -> None:
    """NAME=value lines become credential files readable by root only; the plain file is then removed."""
    for number, line in enumerate(secrets_file.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, separator, value = line.partition("=")
        name, value = name.strip(), value.strip().strip("'\"")
        if not separator or not _SECRET_NAME.match(name) or not value:
            raise InstallError(f"{secrets_file} line {number}: expected NAME=value, e.g. TELEGRAM_BOT_TOKEN=123:abc")
        path = credentials / name
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(value + "\n")
        path.chmod(0o600)
        plan.note(f"/etc/edge/credentials/{name}")
    secrets_file.unlink()  # on a FAT boot partition anyone could read it


def _run(plan: Plan) -> None:
    if plan.root.resolve() != Path("/"):
        return  # preparing another tree: the commands are reported, not run
    for command in plan.commands:
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise InstallError(f"`{' '.join(command)}` failed: {result.stderr.strip() or result.returncode}")
