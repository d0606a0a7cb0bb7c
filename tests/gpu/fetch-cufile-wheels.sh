#!/usr/bin/env bash
# Download one libcufile wheel per minor release (tests/gpu/cufile-wheels.txt) into .whl-cufile/
# (ignored by git), then unzip only nvidia/*/lib/libcufile.so.0 of each into
# .cufile-lib/<release>/libcufile.so.0 and record what each wheel carries
# (.cufile-lib/manifest.json: wheel, member, sha256, size, any cufile.json inside).
# The device run carries the wheels only and unzips them there (11 MiB; the unzipped libraries are 29 MiB).
# Runs where pip can reach the package index.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl-cufile
# one pip call per wheel: several versions of one project cannot share a requirements file
grep -v '^#' tests/gpu/cufile-wheels.txt | grep . | while read -r req; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d .whl-cufile "$req"
done
python3 tests/gpu/cufile_sweep/unpack.py .whl-cufile .cufile-lib
du -sh .whl-cufile .cufile-lib
