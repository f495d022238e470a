"""CA certificates looked up on demand from the system's hashed directory, instead of all parsed at start.

aiohttp builds its default TLS contexts when it is imported; with the CA bundle file that means parsing
~140 certificates into every process (2 MB RSS, ~40 ms). OpenSSL can instead look a CA up by its hash
in a directory like /etc/ssl/certs only when a TLS handshake needs it — same verification, less memory.
Applied only when SSL_CERT_FILE is unset or names the system's own bundle (Debian builds that bundle and
the hashed directory from the same certificates), and the hashed directory is really there.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path


def load_ca_on_demand(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Call before aiohttp is imported. Returns whether the on-demand lookup was switched on."""
    defaults = ssl.get_default_verify_paths()
    if environ.get("SSL_CERT_FILE") not in (None, "", defaults.cafile, defaults.openssl_cafile):
        return False  # the user chose a bundle of their own
    directory = Path(environ.get("SSL_CERT_DIR") or defaults.capath or "/etc/ssl/certs")
    if not any(directory.glob("*.0")):  # not a hashed directory: keep OpenSSL's default behaviour
        return False
    environ["SSL_CERT_FILE"] = str(directory / "edge-no-bundle")  # a file that does not exist: no bundle loaded
    environ.setdefault("SSL_CERT_DIR", str(directory))
    return True
