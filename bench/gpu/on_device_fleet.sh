#!/usr/bin/env bash
# bench/bench_fleet.py on a roomier machine than the 2-core development VM (the lent GPU
# machine has 16 cores): the simulated nodes no longer share the controller's cores.
#
# The machine has Python 3.12 but none of our dependencies and no network: build
# .whl/site312.tar.xz here first (our dependencies' cp312 wheels, at the versions
# `.venv/bin/pip freeze` shows, installed into one folder, xz-compressed to fit the
# 64 MiB a call carries; loose .whl/*.whl files are installed over it, to fix one
# package without compressing again):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 ... -d .whl PKG==VER
#   pip install --no-deps --target /tmp/site312 ... .whl/*.whl
#   tar cf - -C /tmp/site312 . | xz -T2 -6 > .whl/site312.tar.xz
# Older trees for before/after go along as .whl/tree-REV.tar (git archive REV) and are
# unpacked to /tmp/tree-REV, for `--src /tmp/tree-REV`.
# then run, there:  OUT=DIR bash bench/gpu/on_device_fleet.sh NAME ARGS... [-- NAME ARGS...]
# Each NAME ARGS... is one bench_fleet.py run whose figures go to $OUT/NAME.json.
set -u
OUT=${OUT:?set OUT to a folder}
SITE=/tmp/site312
if [ ! -d "$SITE" ]; then
  mkdir -p "$SITE" && xz -dc .whl/site312.tar.xz | tar xf - -C "$SITE" || exit 1
  for wheel in .whl/*.whl; do
    [ -e "$wheel" ] || continue
    python3 -m pip install -q --no-deps --no-index --upgrade --target "$SITE" "$wheel" || exit 1
  done
fi
# bench_fleet.py gives its children PYTHONPATH=<source tree> alone: a .pth file puts the
# dependencies on the interpreter's own path instead, ahead of its site-packages (whose
# older rich would break textual).
echo "import sys; sys.path.insert(1, '$SITE')" \
  >"$(python3 -c 'import site; print(site.getsitepackages()[0])')/gpufleet-bench.pth"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
for tree in .whl/tree-*.tar; do
  [ -e "$tree" ] || continue
  dest=/tmp/$(basename "$tree" .tar)
  mkdir -p "$dest" && tar xf "$tree" -C "$dest"
done
echo "cores $(nproc), $(python3 --version)"
run() {
  local name=$1; shift
  echo "== $name: $*"
  python3 bench/bench_fleet.py --json "$OUT/$name.json" "$@" 2>&1 | tail -n 40
}
args=()
for word in "$@"; do
  if [ "$word" = "--" ]; then run "${args[@]}"; args=(); else args+=("$word"); fi
done
[ ${#args[@]} -gt 0 ] && run "${args[@]}"
