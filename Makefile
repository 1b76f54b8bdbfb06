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

.PHONY: demo test test-all lint bench examples clean azurite

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

demo: $(STAMP)
	$(BIN)/fsmemory demo

test: $(STAMP) $(AZURITE)
	$(BIN)/python -m pytest

test-all: $(STAMP) $(AZURITE)
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
	rm -rf $(VENV) agent_memory .pytest_cache .mypy_cache .ruff_cache
