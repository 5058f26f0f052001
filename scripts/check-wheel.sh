#!/usr/bin/env bash
# Builds the wheel, installs it into a fresh virtualenv and runs
# `gpufleet demo --headless --duration 15` from it (with pipx too when present: its install,
# `help config` and `sla` over the demo's history), outside the source tree with no
# PYTHONPATH: the agent zipapp, the demo scenario, the themes and the docs must all come
# from the installed wheel, and the wheel must carry no test support
# (scripts/check_wheel_contents.py). Needs network access to PyPI for the build backend and the
# dependencies. Usage: scripts/check-wheel.sh [PYTHON]
set -euo pipefail

python="${1:-python3}"
src="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap '[ -z "${pipx_pid:-}" ] || kill "$pipx_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
unset PYTHONPATH

# Debian's python3 has no pip (python3-venv brings it only into virtualenvs): build with
# the pip of a throwaway virtualenv, install into another, fresh one.
echo "check-wheel: building the wheel"
"$python" -m venv "$work/build"
"$work/build/bin/pip" wheel -q --no-deps -w "$work/dist" "$src"
wheel="$(ls "$work"/dist/gpufleet-*.whl)"
"$python" "$src/scripts/check_wheel_contents.py" "$wheel"

# pipx's install (a second virtualenv and every dependency: half a minute of unpacking)
# runs while the first virtualenv is installed and runs the demo.
pipx_pid=""
if command -v pipx >/dev/null 2>&1; then
  export PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/pipx-bin"
  pipx install --python "$python" "$wheel" >"$work/pipx.log" 2>&1 &
  pipx_pid=$!
fi

echo "check-wheel: installing $(basename "$wheel") into a fresh virtualenv"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel"

run_demo() {  # $1: the installed gpufleet
  cd "$work"  # nothing from the source tree is reachable from here
  "$1" demo --headless --duration 15 --nodes 4 --data-dir "$work/data-$2" >"$work/demo-$2.log" 2>&1 || {
    cat "$work/demo-$2.log" >&2
    echo "check-wheel: the demo failed ($2)" >&2
    exit 1
  }
  grep -q "nodes 4/4 streaming" "$work/demo-$2.log" || {
    cat "$work/demo-$2.log" >&2
    echo "check-wheel: the demo's nodes never streamed ($2)" >&2
    exit 1
  }
  "$1" help config | grep -q '^## \[metrics\]' || {
    echo "check-wheel: gpufleet help config does not print the shipped docs ($2)" >&2
    exit 1
  }
  "$1" help grafana/gpufleet.json | "$python" -c 'import json, sys; json.load(sys.stdin)' || {
    echo "check-wheel: gpufleet help grafana/gpufleet.json does not print the dashboard ($2)" >&2
    exit 1
  }
  "$1" sla -c "$work/data-$2/demo-config.toml" --data-dir "$work/data-$2" --format json >/dev/null
  echo "check-wheel: $2 ok"
}

run_demo "$work/venv/bin/gpufleet" venv
if [ -n "$pipx_pid" ]; then
  # The same wheel's code ran the demo above; what pipx adds is its own install and entry
  # point, so its run is the commands that read the wheel's data files, not a second demo
  # (that took a minute of the CI budget).
  wait "$pipx_pid" || { cat "$work/pipx.log" >&2; exit 1; }
  (cd "$work" && "$PIPX_BIN_DIR/gpufleet" help config | grep -q '^## \[metrics\]') || {
    echo "check-wheel: gpufleet help config does not print the shipped docs (pipx)" >&2
    exit 1
  }
  (cd "$work" && "$PIPX_BIN_DIR/gpufleet" sla -c "$work/data-venv/demo-config.toml" \
    --data-dir "$work/data-venv" --format json >/dev/null)
  echo "check-wheel: pipx ok"
else
  echo "check-wheel: pipx not installed; skipped its run"
fi
