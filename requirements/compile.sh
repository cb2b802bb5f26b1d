#!/bin/sh
# Regenerates requirements/ci.txt from pyproject.toml and requirements/ci.in
# (and run.txt, and the other duroxide releases of the compatibility tier):
#
#     sh requirements/compile.sh             # keeps the current pins where it can
#     sh requirements/compile.sh --upgrade   # every package at its newest release
#
# Run it after changing a dependency in pyproject.toml: `make venv` refuses a
# file that no longer satisfies pyproject.toml. uv resolves for CPython 3.11 on
# Linux x86_64 (CI's machine) from PyPI alone, whatever pip.conf says, and
# writes the sha256 of every file PyPI serves for each pinned release.
set -eu
cd "$(dirname "$0")/.."

UV_VERSION=0.13.9
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools/venv"
"$tools/venv/bin/pip" install --quiet "uv==$UV_VERSION"

# compile NAME WHAT... : requirements/NAME.txt, hashed, for pyproject.toml with
# WHAT (--extra and --group options) and requirements/ci.in. uv keeps the pins
# of the file it writes to as preferences: start from ours.
compile() {
    name=$1
    shift
    [ -f "requirements/$name.txt" ] && cp "requirements/$name.txt" "$tools/$name.txt"
    "$tools/venv/bin/uv" pip compile --quiet --no-header \
        --index-url https://pypi.org/simple \
        --python-version 3.11 --python-platform x86_64-unknown-linux-gnu \
        --generate-hashes $UV_ARGS "$@" \
        -o "$tools/$name.txt" pyproject.toml requirements/ci.in
}
UV_ARGS="$*"

compile ci --extra binary --extra runtime --group dev --group bench --group docs
{
    cat <<'HEADER'
# Every package CI installs, pinned, with the sha256 of each file PyPI serves
# for it: `make venv` installs exactly this set with pip --require-hashes, then
# the project itself (pip install --no-deps --no-build-isolation -e .), and
# fails when this file no longer satisfies pyproject.toml (devkit/pins.py).
# Covers pyproject.toml's dependencies with the extras binary and runtime, the
# dependency groups dev, bench and docs, and requirements/ci.in (pip, setuptools,
# wheel), for CPython 3.11 on Linux x86_64. Do not edit: regenerate with
# `sh requirements/compile.sh` (`--upgrade` to move every pin to its newest
# release).
HEADER
    cat "$tools/ci.txt"
} > requirements/ci.txt
echo "wrote requirements/ci.txt"

compile run --extra binary --extra runtime
{
    cat <<'HEADER'
# What `make run` installs, pinned and hashed as requirements/ci.txt is: the
# project's dependencies with the extras binary and runtime (the demo's
# duroxide 0.2.2 schema), and requirements/ci.in; no development tool. Do not
# edit: regenerate with `sh requirements/compile.sh`.
HEADER
    cat "$tools/run.txt"
} > requirements/run.txt
echo "wrote requirements/run.txt"

# The other released runtimes the compatibility tier runs (devkit/released_runtimes.py):
# each in a virtualenv of its own, since one venv holds one duroxide. duroxide
# has no dependencies; the file pins it alone, with the sha256 of each file.
for release in 0.2.1; do
    name="duroxide-$release"
    echo "duroxide==$release" > "$tools/$name.in"
    [ -f "requirements/$name.txt" ] && cp "requirements/$name.txt" "$tools/$name.txt"
    "$tools/venv/bin/uv" pip compile --quiet --no-header \
        --index-url https://pypi.org/simple \
        --python-version 3.11 --python-platform x86_64-unknown-linux-gnu \
        --generate-hashes $UV_ARGS -o "$tools/$name.txt" "$tools/$name.in"
    {
        cat <<HEADER
# duroxide $release, for the compatibility tier: devkit/released_runtimes.py
# installs exactly this (pip --require-hashes --no-deps) into a cached
# virtualenv of its own, and tests/runtime/test_released_runtimes.py runs the
# runtime's scenario groups with it. Do not edit: regenerate with
# \`sh requirements/compile.sh\`.
HEADER
        # uv's "# via" names our temporary input file: left out.
        sed '/^ *# via/d' "$tools/$name.txt"
    } > "requirements/$name.txt"
    echo "wrote requirements/$name.txt"
done
