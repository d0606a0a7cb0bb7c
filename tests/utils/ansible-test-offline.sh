#!/usr/bin/env bash
# Put the get-pip stand-in where ansible-test looks for its cached bootstrap script
# (~/.ansible/test/cache/get_pip_<ver>.py) for the pip versions ansible-test pins:
# core 2.19 pins 24.2, cores 2.20 and 2.21 pin 25.2 (ansible_test/_internal/python_requirements.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache="${HOME}/.ansible/test/cache"
mkdir -p "$cache"
for v in ${*:-24.2 25.2}; do
  cp "$here/get_pip_standin.py" "$cache/get_pip_${v//./_}.py"
done
echo "ansible-test-offline: get-pip stand-in installed in $cache"
