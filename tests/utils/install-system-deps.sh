#!/usr/bin/env bash
# Install the Debian packages the lab, the tests and the demo need (idempotent; root).
# Package names only: apt uses this machine's configured mirror.
set -euo pipefail
pkgs=(debootstrap systemd-container iproute2 dpkg-dev apt-utils gnupg openssh-client
      dkms gcc make python3-venv rsync chromium)
# Debian's rpm tools for the lab's EL 9 hosts and their signed rpm repository (rpmbuild, rpmsign,
# createrepo_c; dnf and rpm themselves go into the EL 9 image from the mirror)
pkgs+=(rpm createrepo-c)
# The package managers' own version order, compared with the collection's in the unit tests
# (python3-apt's apt_pkg, rpm's Python bindings)
pkgs+=(python3-apt python3-rpm)
# Debian's kernel headers for a real `dkms build` (this machine's own kernel has none).
pkgs+=(linux-headers-amd64)
# promtool (rule checks and unit tests) and the Prometheus server of the monitoring system test
pkgs+=(prometheus)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-system-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-system-deps: ok"
