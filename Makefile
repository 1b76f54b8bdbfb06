# The two commands of the README:
#   make demo   - the main job: a scripted session on a local folder (./agent_memory), in
#                 .venv-demo, which holds fsmemory and its three dependencies only
#   make test   - the test suite, with its own S3 (moto), GCS (fake-gcs-server), Azure
#                 Blob (Azurite, installed from npm into .venv/azurite) and Redis servers
#                 started on loopback by the tests themselves
# Both create their environment and install what they need on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Azurite, the Azure Storage emulator (npm package); the tests find it under the venv.
AZURITE_DIR := $(VENV)/azurite
AZURITE     := $(AZURITE_DIR)/node_modules/.bin/azurite-blob
# The demo's own environment: the core package, no extras, no test tools.
DEMO_VENV   := .venv-demo
DEMO_STAMP  := $(DEMO_VENV)/.installed
# make test-lowest: every direct dependency at the lowest version pyproject.toml allows.
LOWEST_VENV := .venv-lowest
LOWEST_TESTS ?= tests/test_fs tests/test_memory tests/test_cli tests/test_demo.py tests/test_packaging.py
# The documentation site's tools (the pyproject `docs` dependency group).
DOCS_STAMP  := $(VENV)/.docs-installed

.PHONY: demo test test-all test-lowest test-pythons lint bench examples clean azurite docs docs-browser

# pip >= 25.1 for --group (the test tools are a dependency group, not an extra).
$(STAMP): pyproject.toml
	@echo "== setting up $(VENV): fsmemory with every extra and the test tools (the first time takes a few minutes)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all]' --group test
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml
	@echo "== setting up $(DEMO_VENV): fsmemory and its three dependencies, nothing else (under a minute)"
	test -x $(DEMO_VENV)/bin/python || $(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install --quiet -e .
	touch $(DEMO_STAMP)

# Installed once (the file target exists afterwards); without npm the Azure tests skip
# (or fail, with FSMEMORY_REQUIRE_SERVICES=1).
$(AZURITE):
	@if command -v npm >/dev/null 2>&1; then \
		echo "== installing Azurite (Azure Blob emulator for the tests) from npm into $(AZURITE_DIR)"; \
		mkdir -p $(AZURITE_DIR) && \
		npm install --prefix $(AZURITE_DIR) --no-audit --no-fund --loglevel=error azurite@3 && \
		test -x $(AZURITE); \
	else \
		echo "== npm not found: Azurite not installed, the Azure tests will be skipped"; \
	fi

azurite: $(AZURITE)

# fsmemory itself too: the CLI page shows the installed command's --help.
$(DOCS_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e . --group docs
	touch $(DOCS_STAMP)

# Headless Chromium for tests/test_docs.py, which opens every page of the built site:
# Debian's package, installed when missing and apt-get can run (as root). Without it the
# test skips (or fails, with FSMEMORY_REQUIRE_SERVICES=1).
docs-browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "== installing chromium (headless browser for the docs test) with apt-get"; \
		apt-get install -y -qq chromium >/dev/null 2>&1 || \
		{ apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }; \
	else \
		echo "== chromium not found and apt-get not usable as root: the docs browser test will be skipped"; \
	fi

# The documentation site, warnings as errors, into site/.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/fsmemory demo

test: $(STAMP) $(AZURITE) $(DOCS_STAMP) docs-browser
	$(BIN)/python -m pytest

test-all: $(STAMP) $(AZURITE) $(DOCS_STAMP) docs-browser
	$(BIN)/python -m pytest -m ''

# Proves the floors: a new $(LOWEST_VENV) with uv's lowest-direct resolution of
# -e .[all] and the test group, then the storage, memory and command-line suites in it.
test-lowest:
	@echo "== setting up $(LOWEST_VENV) with every direct dependency at its lowest allowed version"
	rm -rf $(LOWEST_VENV)
	$(PYTHON) -m venv $(LOWEST_VENV)
	$(LOWEST_VENV)/bin/python -m pip install --quiet uv
	$(LOWEST_VENV)/bin/uv pip install --quiet --python $(LOWEST_VENV)/bin/python \
		--resolution lowest-direct -e '.[all]' --group test
	$(LOWEST_VENV)/bin/python -m pytest -x -q -m 'not slow' $(LOWEST_TESTS)

# The wheel on every Python the classifiers name: built once (python -m build --wheel),
# installed alone (no extras) in a fresh venv on each python3.X found on PATH or under
# pyenv (a missing one is skipped), then the README quickstart, fsmemory --help and
# python -m fsmemory --help there; prints a table. A few minutes: not part of make test.
test-pythons: $(STAMP)
	$(BIN)/python -c 'import build' 2>/dev/null || $(BIN)/python -m pip install --quiet 'build>=1.2'
	$(BIN)/python -m tests.wheel_check

lint: $(STAMP)
	$(BIN)/ruff check fsmemory tests benchmarks examples
	$(BIN)/ruff format --check fsmemory tests benchmarks examples
	$(BIN)/mypy

examples: $(STAMP)
	for f in examples/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py --quick

clean:
	rm -rf $(VENV) $(DEMO_VENV) $(LOWEST_VENV) agent_memory site .pytest_cache .mypy_cache .ruff_cache
