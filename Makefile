# halomem: `make demo` runs the main job on the embedded default; `make test` passes the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-full lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

test: install
	HALOMEM_TEST_PROFILE=ci $(BIN)/python -m pytest -q

test-full: install
	HALOMEM_TEST_PROFILE=full $(BIN)/python -m pytest -q

lint: install
	$(BIN)/python -m compileall -q halomem tests
	$(BIN)/halomem conformance baseline >/dev/null

bench: install
	$(BIN)/halomem bench quality --dataset locomo --out bench-results
	$(BIN)/halomem bench latency --memories 10000,100000 --out bench-results

clean:
	rm -rf $(VENV) .halomem-demo bench-results
