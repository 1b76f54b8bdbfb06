# The two commands of the README:
#   make demo   - the main job: a scripted session on a local folder (./agent_memory)
#   make test   - the test suite, with its own S3 (moto), GCS (fake-gcs-server) and
#                 Redis servers started on loopback by the tests themselves
# Both create .venv and install what they need on first use.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-all lint bench examples clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/fsmemory demo

test: $(STAMP)
	$(BIN)/python -m pytest

test-all: $(STAMP)
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
