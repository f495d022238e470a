#!/bin/sh
# `make build`: a Nuitka standalone build of edge for this machine, stripped, and a tarball beside it.
#   build/dist/edge/edge                          the program (with its libraries in the same directory)
#   build/edge-<version>-linux-<arch>.tar.zst     what `make install` or the image unpacks into /opt/edge
# Needs a C compiler, patchelf and (for speed) ccache: `apt-get install gcc patchelf ccache zstd`.
set -eu
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=build/.venv
OUT=build/out
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "nuitka>=2.4" zstandard .
rm -rf build/lib build/bdist.*  # setuptools' own build/ leftovers, not ours
VERSION=$("$VENV/bin/python" -c 'import edge; print(edge.__version__)')
ARCH=$(uname -m)
rm -rf "$OUT"
# Standalone, not onefile: one process, so READY=1, the watchdog and SIGTERM reach edge itself.
# --lto=yes: a smaller binary that starts faster; with ccache it adds well under a minute here.
# No -OO: the tools' docstrings are their descriptions for the model. Compiled as `-m edge`, so that
# edge/platform/ never shadows the standard library's `platform` (as it would with edge/ on sys.path).
# Third-party packages stay bytecode (much smaller, no slower to start); edge itself is compiled.
# sqlite_vec is included as a package: Nuitka then ships its vec0.so as an extension module.
"$VENV/bin/python" -m nuitka --standalone --assume-yes-for-downloads --output-dir="$OUT" \
    --output-filename=edge --python-flag=no_site --python-flag=-O --python-flag=-m --lto=yes \
    --include-package=edge \
    --include-package=sqlite_vec \
    --include-module=gpiozero.pins.lgpio --include-module=gpiozero.pins.mock \
    --include-module=serial.urlhandler.protocol_loop --include-module=serial.urlhandler.protocol_socket \
    --include-module=serial.urlhandler.protocol_rfc2217 \
    --noinclude-custom-mode=aiohttp:bytecode --noinclude-custom-mode=gpiozero:bytecode \
    --noinclude-custom-mode=serial:bytecode --noinclude-custom-mode=psutil:bytecode \
    --noinclude-custom-mode=yarl:bytecode --noinclude-custom-mode=multidict:bytecode \
    --noinclude-custom-mode=frozenlist:bytecode --noinclude-custom-mode=aiosignal:bytecode \
    --noinclude-custom-mode=propcache:bytecode --noinclude-custom-mode=aiohappyeyeballs:bytecode \
    --noinclude-custom-mode=attr:bytecode --noinclude-custom-mode=attrs:bytecode \
    --noinclude-custom-mode=idna:bytecode --noinclude-custom-mode=uvloop:bytecode \
    --noinclude-custom-mode=email:bytecode --noinclude-custom-mode=http:bytecode \
    --noinclude-custom-mode=xml:bytecode --noinclude-custom-mode=urllib:bytecode \
    --noinclude-custom-mode=typing_extensions:bytecode --noinclude-custom-mode=colorzero:bytecode \
    --nofollow-import-to=tkinter --nofollow-import-to=unittest --nofollow-import-to=pydoc \
    --nofollow-import-to=test --nofollow-import-to=idlelib --nofollow-import-to=lib2to3 \
    --nofollow-import-to=sqlite3 --nofollow-import-to=doctest --nofollow-import-to=pdb \
    --nofollow-import-to=xmlrpc --nofollow-import-to=wsgiref --nofollow-import-to=ensurepip \
    --nofollow-import-to=venv --nofollow-import-to=distutils --nofollow-import-to=setuptools \
    --nofollow-import-to=pip --nofollow-import-to=curses --nofollow-import-to=dbm \
    --nofollow-import-to=http.server --nofollow-import-to=smtplib --nofollow-import-to=ftplib \
    --nofollow-import-to=cProfile --nofollow-import-to=profile \
    edge
rm -rf build/dist && mkdir -p build/dist && mv "$OUT"/*.dist build/dist/edge
find build/dist/edge -name '*.so*' -type f -exec strip --strip-unneeded {} +
strip --strip-unneeded build/dist/edge/edge
cp README.md systemd/edge.service build/dist/edge/
TARBALL="build/edge-$VERSION-linux-$ARCH.tar.zst"
tar -C build/dist -cf - edge | zstd -q -19 -T0 -f -o "$TARBALL"
echo "built build/dist/edge ($(du -sh build/dist/edge | cut -f1)) and $TARBALL ($(du -h "$TARBALL" | cut -f1))"
