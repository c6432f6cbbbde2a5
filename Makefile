# GPU Fleet: `make demo` to try it, `make test` to check it. Both install what is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
INSTALLED_DEV := $(VENV)/.installed-dev

.PHONY: install install-dev demo test lint format chromium clean

$(INSTALLED): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# The CPU build of torch first: a bare torch requirement would pull several GB of CUDA packages.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e .
	touch $(INSTALLED)

# The test and lint tools, which the demo does not need.
$(INSTALLED_DEV): $(INSTALLED)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(INSTALLED_DEV)

install: $(INSTALLED)

install-dev: $(INSTALLED_DEV)

demo: install
	$(PY) -m fleet.demo

chromium:
	@test -x /usr/bin/chromium || (apt-get update -qq && apt-get install -y -qq chromium)

lint: install-dev
	$(VENV)/bin/ruff check .

format: install-dev
	$(VENV)/bin/ruff format .

test: install-dev chromium lint
	SECRET_KEY=$${SECRET_KEY:-test-only-secret-key} $(PY) -m fleet.embedded -- $(VENV)/bin/pytest $(PYTEST_ARGS)

clean:
	rm -rf var/ .pytest_cache .ruff_cache
