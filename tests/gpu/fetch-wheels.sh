#!/usr/bin/env bash
# Download the wheels listed in tests/gpu/wheels.txt into .whl/ (ignored by git) for the H100
# host run (tests/gpu/device-run.sh). Runs where pip can reach the package index.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d .whl -r <(grep -v '^#' tests/gpu/wheels.txt | grep .)
du -sh .whl
