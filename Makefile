# The two set-up commands: `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test e2e lint bench release-check clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ctxward demo

# Two workers (pytest-xdist) on this 2-core machine; the heavy variants (`-m slow`) and the
# real-client suites (`make e2e`) run apart. Bytecode is cached even where the environment says
# not to (PYTHONDONTWRITEBYTECODE): each hook process the tests start would compile ctxward again.
# tests/hardening (all slow) and tests/e2e (all e2e) are not even collected: ~1 s per worker.
test: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -m "not slow and not e2e" -n 2 \
		--ignore=tests/hardening --ignore=tests/e2e

# opencode-ai's postinstall runs `opencode --version`, which writes under the XDG folders:
# they are kept inside its node_modules instead of the user's HOME.
e2e: $(STAMP)
	cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error
	cd tests/e2e/gemini && npm ci --no-audit --no-fund --loglevel=error
	cd tests/e2e/opencode && X="$$PWD/node_modules/.xdg" && XDG_CONFIG_HOME="$$X/config" \
		XDG_DATA_HOME="$$X/data" XDG_STATE_HOME="$$X/state" XDG_CACHE_HOME="$$X/cache" \
		npm ci --no-audit --no-fund --loglevel=error
	cd tests/e2e/codex && npm ci --no-audit --no-fund --loglevel=error
	CTXWARD_E2E_REQUIRED=1 $(BIN)/python -m pytest -q -m e2e tests/e2e

lint: $(STAMP)
	$(BIN)/ruff format --check lib tests hooks bench
	$(BIN)/ruff check lib tests hooks bench
	$(BIN)/mypy

# Every benchmark in bench/, one report: docs/BENCHMARKS.md (about 3 min; QUICK=1: about 1 min).
bench: $(STAMP)
	$(BIN)/python bench/report.py $(if $(QUICK),--quick,)

# What .github/workflows/release.yml runs on a tag: build the sdist and wheel, twine check,
# install the wheel in a fresh venv (dependencies from the index) and smoke-test it (about 30 s).
release-check: $(STAMP)
	$(BIN)/python scripts/release_check.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
