# trainperf: two commands do everything on a fresh machine.
#   make report   creates the environment if missing, runs the main job (notebooks, figures, site)
#   make test     creates the environment if missing, runs the test suite (one worker per CPU)
# Set PYTHON to choose the interpreter used to create .venv (default python3, needs >= 3.11).

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.trainperf-installed
OUT    ?= _output
PYTEST_ARGS ?=
# test workers (pytest-xdist): one more than the CPUs, because part of the suite waits (live Slurm
# daemons, Chromium, kernels starting) and a third worker on 2 cores keeps the CPUs busy meanwhile
# (README, Performance: 304 s and 327 s with 2 workers, 296 s and 231 s with 3, 324 s with 4,
# measured one after the other);
# tests sharing a fixture run in one worker (tests/conftest.py). TEST_JOBS=0: in this process.
TEST_JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))

.PHONY: report test test-plain env lint format talk clean

env: $(STAMP)

# scripts/make_env.sh: the venv with uv (pip where uv cannot be had), then the bytecode of what the
# report's processes import (scripts/compile_bytecode.py).
$(STAMP): pyproject.toml
	@PYTHON=$(PYTHON) sh scripts/make_env.sh $(VENV)
	@touch $(STAMP)

report: $(STAMP)
	$(BIN)/trainperf report --out $(OUT)

test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadgroup $(PYTEST_ARGS)

# the tests whose behaviour depends on an optional component, with every component hidden
test-plain: $(STAMP)
	bash scripts/plain_tests.sh

lint: $(STAMP)
	$(BIN)/ruff check src tests notebooks benchmarks
	$(BIN)/ruff format --check src tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

# The slides (talk/index.qmd in Japanese, talk/en.qmd in English): talk/prepare.py copies the figures
# and $(OUT)/values.yml into talk/ and checks that every figure and value the decks quote exists.
# talk/_output is Quarto's output of the decks only, made afresh: Quarto 1.10.18 refuses to render
# the talk project again over an existing one ("Cannot copy talk to a subdirectory of itself").
# Without a CJK font `make report` exports no Japanese figures: prepare.py then says so in one line
# (and which font to install) and lists the English deck only.
talk: $(STAMP)
	@decks="$$($(BIN)/python talk/prepare.py --figures figures --values $(OUT)/values.yml --talk talk --print-decks)" || exit 1; \
	if command -v quarto >/dev/null 2>&1; then cd talk && rm -rf _output && quarto render $$decks; \
	else echo "talk: Quarto not found on PATH; skipped rendering talk/ (figures and values copied to talk/; install Quarto from https://quarto.org/docs/get-started/ or 'conda install -c conda-forge quarto')"; fi

clean:
	rm -rf $(OUT) _book figures .quarto
