"""`edge service install|uninstall` into a temporary root, and the image's first-boot script on a directory
tree standing in for the boot and root partitions."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from edge import config
from edge.platform.install import InstallError, install, uninstall

REPO = Path(__file__).resolve().parents[2]


def fake_dist(directory: Path, version: str = "1") -> Path:
    """A stand-in for the standalone build: an `edge` that runs this checkout, and the unit."""
    dist = directory / "edge"
    dist.mkdir(parents=True)
    program = dist / "edge"
    program.write_text(f'#!/bin/sh\n# build {version}\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m edge "$@"\n')
    program.chmod(0o755)
    shutil.copy(REPO / "systemd" / "edge.service", dist / "edge.service")
    return dist


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_install_upgrade_and_uninstall_in_a_temporary_root(tmp_path):
    root = tmp_path / "root"
    secrets = tmp_path / "secrets.env"
    secrets.write_text("# from the owner\nTELEGRAM_BOT_TOKEN=123:abc\nOPENAI_API_KEY='sk-1'\n")
    plan = install(root, fake_dist(tmp_path / "v1"), secrets_file=secrets, enable=True)
    assert (root / "opt/edge/edge").read_text().count("build 1") == 1
    assert (root / "etc/systemd/system/edge.service").read_text() == (REPO / "systemd/edge.service").read_text()
    installed = config.load(str(root / "etc/edge/edge.toml"), environ={})
    assert installed.state_dir == Path("/var/lib/edge")  # also for `edge` commands run by hand
    credentials = root / "etc/edge/credentials"
    assert mode(credentials) == 0o700 and mode(credentials / "TELEGRAM_BOT_TOKEN") == 0o600
    assert (credentials / "OPENAI_API_KEY").read_text() == "sk-1\n" and not secrets.exists()
    assert ["systemctl", "enable", "--now", "edge.service"] in plan.commands
    assert any("useradd --system" in " ".join(c) and "--groups gpio,dialout edge" in " ".join(c) for c in plan.commands)

    (root / "etc/edge/edge.toml").write_text("[provider]\nmodel = \"llama3.2:3b\"\n")  # the owner's settings
    install(root, fake_dist(tmp_path / "v2", version="2"))
    assert "build 2" in (root / "opt/edge/edge").read_text()
    assert "build 1" in (root / "opt/edge.previous/edge").read_text()  # kept for a rollback
    assert "llama3.2:3b" in (root / "etc/edge/edge.toml").read_text()  # an upgrade keeps the config
    (root / "var/lib/edge/edge.db").write_text("state")

    uninstall(root)
    assert not (root / "opt/edge").exists() and not (root / "etc/systemd/system/edge.service").exists()
    assert (root / "var/lib/edge/edge.db").exists() and (root / "etc/edge/edge.toml").exists()  # kept
    uninstall(root, purge=True)
    assert not (root / "var/lib/edge").exists() and not (root / "etc/edge").exists()


def test_bad_input_changes_nothing(tmp_path):
    root = tmp_path / "root"
    with pytest.raises(InstallError, match="make build"):
        install(root, tmp_path / "nowhere")
    secrets = tmp_path / "secrets.env"
    secrets.write_text("telegram token 123\n")
    with pytest.raises(InstallError, match="line 1: expected NAME=value"):
        install(root, fake_dist(tmp_path / "v1"), secrets_file=secrets)
    assert secrets.exists()  # not deleted when it could not be read


def test_the_cli_lists_what_it_would_run_on_the_device(tmp_path):
    root = tmp_path / "root"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-m", "edge", "service", "install", "--root", str(root), "--dist",
                             str(fake_dist(tmp_path / "v1"))], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "installed /opt/edge" in result.stdout and "on the device, run systemctl daemon-reload" in result.stdout
    missing = subprocess.run([sys.executable, "-m", "edge", "service", "install", "--root", str(root)],
                             capture_output=True, text=True, env=env, timeout=60)
    assert missing.returncode == 1 and "not a standalone build" in missing.stderr


@pytest.mark.parametrize("carried", ["in the image", "as a tarball on the boot partition"])
def test_first_boot_installs_from_the_boot_partition(tmp_path, carried):
    boot, root = tmp_path / "boot", tmp_path / "root"
    source = boot / "edge"
    source.mkdir(parents=True)
    if carried == "in the image":  # image/prepare.sh unpacked the build into the root partition
        fake_dist(root / "usr/local/lib/edge/dist")
    else:
        if shutil.which("zstd") is None:
            pytest.skip("zstd is not installed")
        build = fake_dist(tmp_path / "build")
        subprocess.run(f"tar -C {build.parent} -cf - edge | zstd -q -o {source}/edge-1-linux-{os.uname().machine}.tar.zst",
                       shell=True, check=True)
    (source / "edge.toml").write_text('[provider]\nmodel = "qwen2.5:1.5b"\n')
    (source / "secrets.env").write_text("TELEGRAM_BOT_TOKEN=123:abc\n")
    env = {**os.environ, "EDGE_BOOT": str(boot), "EDGE_ROOT": str(root)}
    result = subprocess.run(["sh", str(REPO / "image" / "firstboot.sh")], capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert (root / "opt/edge/edge").exists() and (root / "etc/systemd/system/edge.service").exists()
    assert (root / "etc/edge/edge.toml").read_text() == '[provider]\nmodel = "qwen2.5:1.5b"\n'
    assert (root / "etc/edge/credentials/TELEGRAM_BOT_TOKEN").read_text() == "123:abc\n"
    assert not source.exists() and not (boot / "edge.installed" / "secrets.env").exists()
    assert not (root / "usr/local/lib/edge/dist").exists()  # no second copy left behind
    assert "systemctl enable --now edge.service" in result.stdout
    again = subprocess.run(["sh", str(REPO / "image" / "firstboot.sh")], capture_output=True, text=True, env=env)
    assert again.returncode == 0 and "nothing to install" in again.stdout
