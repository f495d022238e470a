"""CA certificates on demand: HTTPS to a server signed by a CA in the hashed directory still verifies;
a server signed by an unknown CA is still refused."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from edge.platform.tls import load_ca_on_demand

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command is not installed")


def make_ca(directory, name: str) -> tuple:  # type: ignore[no-untyped-def]
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    return key, cert


def make_server_cert(directory, ca_key, ca_cert) -> tuple:  # type: ignore[no-untyped-def]
    key, csr, cert, ext = (directory / n for n in ("server.key", "server.csr", "server.pem", "ext.cnf"))
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", key,
                    "-out", csr], check=True, capture_output=True)
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial",
                    "-days", "2", "-extfile", ext, "-out", cert], check=True, capture_output=True)
    return key, cert


def hashed_dir(directory, ca_cert):  # type: ignore[no-untyped-def]
    directory.mkdir()
    digest = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", ca_cert], check=True, capture_output=True,
                            text=True).stdout.strip()
    shutil.copy(ca_cert, directory / f"{digest}.0")
    return directory


CLIENT = textwrap.dedent("""
    import asyncio, ssl, sys
    from edge.platform.tls import load_ca_on_demand
    assert load_ca_on_demand()
    import aiohttp
    from aiohttp import web

    async def main():
        app = web.Application()
        app.router.add_get("/", lambda r: web.Response(text="verified"))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(sys.argv[1], sys.argv[2])
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        try:
            async with aiohttp.ClientSession() as session, session.get(f"https://127.0.0.1:{port}/") as response:
                print(await response.text())
        except aiohttp.ClientConnectorCertificateError:
            print("refused")
        await runner.cleanup()

    asyncio.run(main())
""")


@pytest.mark.parametrize("trusted", [True, False])
def test_https_verification_with_ca_on_demand(tmp_path, trusted):
    ca_key, ca_cert = make_ca(tmp_path, "edge-test-ca")
    _, other_cert = make_ca(tmp_path, "unknown-ca")
    server_key, server_cert = make_server_cert(tmp_path, ca_key, ca_cert)
    certs = hashed_dir(tmp_path / "certs", ca_cert if trusted else other_cert)
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE",)}
    env["SSL_CERT_DIR"] = str(certs)
    result = subprocess.run([sys.executable, "-c", CLIENT, str(server_cert), str(server_key)], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == ("verified" if trusted else "refused"), result.stderr


def test_left_alone_when_the_user_chose_a_bundle_or_there_is_no_hashed_directory(tmp_path):
    assert not load_ca_on_demand({"SSL_CERT_FILE": "/my/bundle.pem"})
    assert load_ca_on_demand({"SSL_CERT_FILE": ssl.get_default_verify_paths().cafile or "/etc/ssl/cert.pem",
                              "SSL_CERT_DIR": "/etc/ssl/certs"}) or not any(Path("/etc/ssl/certs").glob("*.0"))
    assert not load_ca_on_demand({"SSL_CERT_DIR": str(tmp_path)})  # empty: not a hashed directory
    (tmp_path / "abcd1234.0").write_text("x")
    environ = {"SSL_CERT_DIR": str(tmp_path)}
    assert load_ca_on_demand(environ) and environ["SSL_CERT_FILE"] == str(tmp_path / "edge-no-bundle")
