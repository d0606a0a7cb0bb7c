#!/bin/bash -eu
# Usage: build-collection.sh CHECKOUT OUTPUT_DIR
# ansible-galaxy collection build of a copy of CHECKOUT whose README.md is README-collection.md:
# Galaxy and an installed collection show the root README.md, and the checkout's README.md is the
# developers'. galaxy.yml's manifest allowlist still decides what goes in. (A copy, not links:
# the build skips symbolic links.)
src=$(cd "$1" && pwd)
out=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for entry in "$src"/*; do  # no dot entries: virtualenvs, caches
    case ${entry##*/} in
        README.md | README-collection.md | build | reports) ;;
        *) cp -a "$entry" "$stage/" ;;
    esac
done
cp "$src/README-collection.md" "$stage/README.md"
"${ANSIBLE_GALAXY:-ansible-galaxy}" collection build --force --output-path "$out" "$stage"
