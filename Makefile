# The two commands of the README's quick start: `make demo` and `make test`; `make check-fast`
# is the edit loop (docs/development.md).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/gpufleet: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,probes]'
	touch $@

.PHONY: demo test check check-fast lint types layers pytest pytest-fast bench system-deps wheel-check
demo: $(BIN)/gpufleet
	$(BIN)/gpufleet demo

# The test command sets up everything the tests start (sshd, Prometheus, VictoriaMetrics,
# NATS, tmux) before running them, so it works as is on a fresh Debian machine.
# The virtualenv's install and the static checks (mypy: one core) run beside the wheel
# check (its own two installs, then a 4-node demo), which needs nothing of .venv; the
# tests run alone after both, since they keep both cores busy and their timing-sensitive
# ones failed with the wheel check beside them.
test: system-deps
	$(MAKE) --no-print-directory -j2 --output-sync=target check wheel-check
	$(MAKE) --no-print-directory pytest

system-deps:
	bash scripts/install-system-deps.sh

check: lint types layers

lint types layers pytest pytest-fast: $(BIN)/gpufleet

# The edit loop: lint, types, layers and the unit tests that start no server of their own
# (no sshd, Prometheus, NATS, tmux or loopback fleet): whole directories of pure tests, less
# the files in them that do start one. Under a minute on a 2-core machine.
FAST_TESTS := tests/config tests/export tests/fleet tests/sla tests/sim tests/history \
	tests/agent tests/probes tests/metrics tests/layering/test_room_cycles.py \
	tests/layering/test_development_guide.py tests/layering/test_layering.py
FAST_SKIP := agent/test_process.py agent/test_processes.py \
	probes/test_runner.py probes/test_program.py probes/test_cli.py \
	probes/test_cancel_at_connect.py metrics/test_prometheus.py metrics/test_web_config.py \
	metrics/test_prom_port.py metrics/test_promtool.py metrics/test_dashboards.py \
	metrics/test_serve.py metrics/test_serve_cli.py

check-fast: check pytest-fast

pytest-fast:
	$(BIN)/pytest -q -p no:cacheprovider -n 2 -m "not e2e" $(FAST_TESTS) \
		$(addprefix --ignore=tests/,$(FAST_SKIP))

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types:
	$(BIN)/mypy

layers:
	$(BIN)/lint-imports

# One and a half workers a core: the loopback tests wait on their simulated nodes, SSH
# and timers about a quarter of the time (2 workers kept 2 cores 73 % busy, 3 workers
# 87 %, and the suite took 611 s and 465 s). Twice as many as cores made tests that time
# an SSH handshake or a straggler rule fail.
PYTEST_WORKERS ?= $(shell n=$$(nproc); echo $$(( n * 3 / 2 > 1 ? n * 3 / 2 : 1 )))

# The tests write bytecode caches even where the environment turns them off
# (PYTHONDONTWRITEBYTECODE): every worker and every process a test starts (serve, shards,
# the CLI) imports the same modules, and pytest rewrites each test file's asserts; from
# source each time, collection alone took 13 s a worker instead of 7.
pytest:
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS)

# Builds the wheel, installs it into a fresh venv (and pipx) and runs the demo from it.
wheel-check:
	bash scripts/check-wheel.sh $(PY)

# Every entry point with its defaults; bench/lib holds their helpers, bench/tools the
# revision comparisons and the hour-long soak, bench/gpu what runs on a lent GPU machine.
bench: $(BIN)/gpufleet
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done
