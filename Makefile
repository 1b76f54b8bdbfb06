# The two commands of the README:
#   make demo   - the main job: a scripted session on a local folder (./agent_memory)
#   make test   - the test suite, with its own S3 (moto), GCS (fake-gcs-server), Azure
#                 Blob (Azurite, installed from npm into .venv/azurite) and Redis servers
#                 started on loopback by the tests themselves
# Both create .venv and install what they need on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Azurite, the Azure Storage emulator (npm package); the tests find it under the venv.
AZURITE_DIR := $(VENV)/azurite
AZURITE     := $(AZURITE_DIR)/node_modules/.bin/azurite-blob
# The documentation site's tools (the pyproject `docs` dependency group).
DOCS_STAMP  := $(VENV)/.docs-installed

.PHONY: demo test test-all lint bench examples clean azurite docs docs-browser

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,test]'
	touch $(STAMP)

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

$(DOCS_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --group docs
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
	$(BIN)/mkdocs build --strict

demo: $(STAMP)
	$(BIN)/fsmemory demo

test: $(STAMP) $(AZURITE) $(DOCS_STAMP) docs-browser
	$(BIN)/python -m pytest

test-all: $(STAMP) $(AZURITE) $(DOCS_STAMP) docs-browser
	$(BIN)/python -m pytest -m ''

lint: $(STAMP)
	$(BIN)/ruff check fsmemory tests benchmarks examples
	$(BIN)/ruff format --check fsmemory tests benchmarks examples
	$(BIN)/mypy

examples: $(STAMP)
	for f in examples/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py --quick

clean:
	rm -rf $(VENV) agent_memory site .pytest_cache .mypy_cache .ruff_cache
