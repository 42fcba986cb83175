# foldgate: `make run` serves the gateway locally, `make test` installs everything and runs every check.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SHARED ?= ../shared
CORPORA := $(SHARED)/corpora

DEMO_VENV := .demo/venv
NODE_BIN := demo/node_modules/.bin
PY_SERVERS := mcp-server-git==2026.10.19 mcp-server-time==2026.10.19

# The SAM CLI lives in its own virtualenv: it pins older boto3/pydantic than foldgate's.
SAM_VENV := .sam/venv
SAM_CLI_VERSION := 1.170.0
SAM := SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam
SAM_BUILD_DIR := .aws-sam/build

.PHONY: venv demo-deps run lint format typecheck unit test bench bench-holdout clean
.PHONY: sam-cli sam-validate sam-build

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# The demo fleet (also used by the end-to-end tests): npm servers pinned by demo/package-lock.json,
# PyPI servers in their own virtualenv so their pins never touch foldgate's.
$(NODE_BIN)/mcp-server-everything: demo/package.json demo/package-lock.json
	cd demo && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(DEMO_VENV)/.installed:
	$(PY) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/pip install -q $(PY_SERVERS)
	touch $@

demo-deps: $(NODE_BIN)/mcp-server-everything $(DEMO_VENV)/.installed

run: venv demo-deps
	bash demo/run.sh

lint: venv
	$(BIN)/ruff check shared tests functions tools
	$(BIN)/ruff format --check shared tests functions tools

format: venv
	$(BIN)/ruff check --fix shared tests functions tools
	$(BIN)/ruff format shared tests functions tools

typecheck: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest tests/unit -q

# pytest exits 5 when it collected nothing: that is a failure here, never a pass.
test: lint typecheck demo-deps sam-validate sam-build
	@$(BIN)/pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

# SAM: lint the template offline, then build the functions and the dependency layer (Lambda arm64
# wheels via layers/deps/Makefile: no Docker, no local python3.13) and check the 250 MB limit.
$(SAM_VENV)/.installed:
	$(PY) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install -q --upgrade pip
	$(SAM_VENV)/bin/pip install -q aws-sam-cli==$(SAM_CLI_VERSION)
	touch $@

sam-cli: $(SAM_VENV)/.installed

sam-validate: sam-cli
	$(SAM) validate --lint --region us-east-1

sam-build: sam-cli
	LAYER_PIP="$(CURDIR)/$(SAM_VENV)/bin/python -m pip" $(SAM) build --build-dir $(SAM_BUILD_DIR)
	$(SAM_VENV)/bin/python tools/lambda_size.py $(SAM_BUILD_DIR)

bench: venv
	$(BIN)/foldgate bench tokens --corpus $(CORPORA)/mcpproxy/corpus_v2.tools.json
	$(BIN)/foldgate bench tokens --corpus $(CORPORA)/mcpproxy/corpus_v2.tools.json --mcpproxy-rendering
	$(BIN)/foldgate bench tokens --corpus $(CORPORA)/mcpproxy/livemcptool_snapshot/tools.json
	$(BIN)/foldgate bench tokens --corpus $(CORPORA)/mcpproxy/livemcptool_snapshot/tools.json --mcpproxy-rendering
	$(BIN)/foldgate bench tokens --corpus $(CORPORA)/github-mcp-server/tools.jsonl
	$(BIN)/foldgate bench tokens --corpus $(CORPORA)/mcp-flow/tools.jsonl
	$(BIN)/foldgate bench search --tools $(CORPORA)/mcpproxy/corpus_v2.tools.json --queries $(CORPORA)/mcpproxy/retrieval_golden_v1.json
	$(BIN)/foldgate bench search --tools $(CORPORA)/mcptoolbench-pp/tools.jsonl --queries $(CORPORA)/mcptoolbench-pp/queries.jsonl
	$(BIN)/foldgate bench serve --corpus $(CORPORA)/mcpproxy/livemcptool_snapshot/tools.json
	$(BIN)/foldgate bench cloud --corpus $(CORPORA)/mcpproxy/livemcptool_snapshot/tools.json --corpus $(CORPORA)/mcp-flow/tools.jsonl

clean:
	rm -rf $(VENV) .demo demo/node_modules .mypy_cache .ruff_cache .pytest_cache .aws-sam .sam

# Aggregate search figures on the evaluation-only holdout sets (never tuned on; prints aggregates only).
bench-holdout: venv
	$(BIN)/foldgate bench search --tools $(CORPORA)/livemcpbench/tools.jsonl --queries $(SHARED)/holdout/livemcpbench-queries.jsonl
	$(BIN)/foldgate bench search --tools $(CORPORA)/mcp-flow/tools.jsonl --queries $(SHARED)/holdout/mcp-flow-queries.jsonl
