# The two commands of the README's quick start: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/gpufleet: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,probes]'
	touch $@

.PHONY: demo test check lint types layers pytest bench system-deps wheel-check
demo: $(BIN)/gpufleet
	$(BIN)/gpufleet demo

# The test command sets up everything the tests start (sshd, Prometheus, VictoriaMetrics,
# NATS, tmux) before running them, so it works as is on a fresh Debian machine.
test: system-deps $(BIN)/gpufleet check pytest wheel-check

system-deps:
	bash scripts/install-system-deps.sh

check: lint types layers

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types:
	$(BIN)/mypy

layers:
	$(BIN)/lint-imports

pytest:
	$(BIN)/pytest -q -p no:cacheprovider -n auto

# Builds the wheel, installs it into a fresh venv (and pipx) and runs the demo from it.
wheel-check:
	bash scripts/check-wheel.sh $(PY)

bench: $(BIN)/gpufleet
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done
