#!/usr/bin/env bash
# Installs the system packages the tests start for real, when missing: OpenSSH (sshd and
# ssh -G as an oracle), Prometheus and promtool, VictoriaMetrics, NATS, tmux, Slurm with
# munge, Chromium, and pipx
# (the wheel check installs gpufleet with it as a user would).
# Runs as root, or through sudo; does nothing when everything is present.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "$1" ]; }
have /usr/sbin/sshd || need+=(openssh-server)
have ssh-keygen || need+=(openssh-client)
have prometheus || need+=(prometheus)
have promtool || need+=(prometheus)
have victoria-metrics || need+=(victoria-metrics)
have nats-server || have /usr/sbin/nats-server || need+=(nats-server)
have tmux || need+=(tmux)
have pipx || need+=(pipx)
# Slurm with munge: job attribution is tested against a real slurmctld/slurmd on loopback.
have slurmctld || have /usr/sbin/slurmctld || need+=(slurmctld)
have slurmd || have /usr/sbin/slurmd || need+=(slurmd)
have sbatch || need+=(slurm-client)
have munged || have /usr/sbin/munged || need+=(munge)
# Chromium: `gpufleet web` is tested in a real headless browser.
have chromium || need+=(chromium chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "install-system-deps: need root or sudo to install: ${need[*]}" >&2
    exit 1
  }
  SUDO="sudo"
fi
echo "install-system-deps: installing ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  $(printf '%s\n' "${need[@]}" | sort -u)
