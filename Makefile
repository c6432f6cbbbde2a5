# GPU Fleet: `make demo` to try it, `make test` to check it. Both install what is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
INSTALLED_DEV := $(VENV)/.installed-dev

.PHONY: install install-dev demo test lint format chromium iproute2 nginx podman clean

$(INSTALLED): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# The CPU build of torch first: a bare torch requirement would pull several GB of CUDA packages.
	$(PY) -m pip install -q torch==2.13.0
	# Every role on one machine (web, workers, a node worker) and the embedded PostgreSQL and Redis.
	$(PY) -m pip install -q -e '.[node,embedded]'
	touch $(INSTALLED)

# The test and lint tools, which the demo does not need.
$(INSTALLED_DEV): $(INSTALLED)
	$(PY) -m pip install -q -e '.[node,embedded,dev]'
	touch $(INSTALLED_DEV)

install: $(INSTALLED)

install-dev: $(INSTALLED_DEV)

demo: install
	$(PY) -m fleet.demo

chromium:
	@test -x /usr/bin/chromium || (apt-get update -qq && apt-get install -y -qq chromium)

# `ip` makes the network namespaces of the three-host test; nginx runs the proxy example (tests/deploy/).
iproute2:
	@command -v ip >/dev/null || (apt-get update -qq && apt-get install -y -qq iproute2)

nginx:
	@command -v nginx >/dev/null || (apt-get update -qq && apt-get install -y -qq nginx-light)

# Container runs (tests/training/environments/test_container.py): podman with runc (the test's own
# containers.conf picks it), catatonit for `--init`, and busybox-static for the image the test builds.
podman:
	@command -v podman >/dev/null && command -v runc >/dev/null && test -x /usr/libexec/podman/catatonit \
		&& dpkg -s busybox-static >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq podman runc catatonit busybox-static)

lint: install-dev
	$(VENV)/bin/ruff check .

format: install-dev
	$(VENV)/bin/ruff format .

test: install-dev chromium iproute2 nginx podman lint
	SECRET_KEY=$${SECRET_KEY:-test-only-secret-key} $(PY) -m fleet.embedded -- $(VENV)/bin/pytest $(PYTEST_ARGS)

clean:
	rm -rf var/ .pytest_cache .ruff_cache
