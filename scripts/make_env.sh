#!/bin/sh
# The project's environment, what `make env` runs: VENV (default .venv) with this checkout installed
# in editable mode with its [dev] extra, then the bytecode of what the report imports. One line per
# stage as it starts ("env: ..."), since the whole takes ~20-60 s.
#
# Fast path (~15 s on the development machine, against ~80 s for venv + pip): a venv without pip
# (0.1 s instead of ~6 s for ensurepip), uv installed into it by the interpreter's own pip
# (`pip --python`, pip >= 22.3), then every package installed by uv from PyPI (~8 s instead of
# pip's ~75 s), pip among them (the fallback and .ci/run use it). Any step of the fast path that
# fails falls back to the plain way, `python -m venv` and pip, with one line saying so.
# Usage: PYTHON=python3 sh scripts/make_env.sh [VENV]
set -u
PY=${PYTHON:-python3}
VENV=${1:-.venv}
BIN=$VENV/bin
START=$(date +%s)

if [ ! -x "$BIN/python" ]; then
    echo "env: creating the virtual environment $VENV ($PY -m venv)"
    if ! "$PY" -m venv --without-pip "$VENV" >/dev/null 2>&1; then
        rm -rf "$VENV"
        echo "env: a venv without pip failed; creating it with pip"
        "$PY" -m venv "$VENV" || exit 1
    fi
fi
if ! "$BIN/python" -m uv --version >/dev/null 2>&1; then
    echo "env: installing uv into $VENV"
    # a new venv without pip gets uv from the interpreter's own pip; an existing environment (an
    # older .venv, a conda prefix) from its own pip
    "$PY" -m pip --python "$BIN/python" install --quiet uv >/dev/null 2>&1 \
        || "$BIN/python" -m pip install --quiet uv >/dev/null 2>&1
fi

echo "env: installing trainperf (editable) and its [dev] packages"
if "$BIN/python" -m uv --version >/dev/null 2>&1 \
    && "$BIN/python" -m uv pip install --quiet --python "$BIN/python" pip -e '.[dev]'; then
    :
else
    echo "env: uv not available or failed; installing with pip"
    "$BIN/python" -m pip --version >/dev/null 2>&1 || "$BIN/python" -m ensurepip --upgrade >/dev/null || exit 1
    "$BIN/python" -m pip install --quiet -e '.[dev]' || exit 1
fi
echo "env: compiling the bytecode of what the report imports"
"$BIN/python" scripts/compile_bytecode.py || exit 1
echo "env: ready in $(( $(date +%s) - START )) s ($VENV)"
