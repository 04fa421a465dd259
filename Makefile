# Two commands a newcomer needs: `make demo` and `make test`. Both bootstrap themselves on a
# machine that has only Python 3.11: a tools venv with uv (unless uv is on PATH), then the
# project venv from the committed uv.lock.
PYTHON ?= python3
UV_VERSION := 0.13.9
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/.venv
# Bytecode is cached: the sync compiles the dependencies, and the runs below may write the
# rest (stuntset's own modules, pytest's rewritten test modules and plugins). With
# PYTHONDONTWRITEBYTECODE set, as on the CI machines, every start recompiled them all (an
# empty pytest run: 2.0 s of CPU instead of 0.7 s).
unexport PYTHONDONTWRITEBYTECODE

UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := $(CURDIR)/.tools/bin/uv
endif

# the uv that tests building a package into a venv use (stuntset.checks.install_package)
export STUNTSET_UV := $(UV)

VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.stuntset-synced
DEMO_STAMP := $(VENV)/.stuntset-demo-synced

.PHONY: demo test ci lint typecheck fast slow coverage real browser node wheel wheel-smoke legacy \
	cassettes mocks docs stress durations bench sync demo-sync clean newest

# `make bench CASES=openai_inprocess` runs one case

# The demo needs the base install only: no extras, no dev group (browser, docs, linters), and
# no bytecode compiled ahead for the thousands of files it never imports. If the full venv is
# already there (after `make test`), it is used as it is.
demo: $(DEMO_STAMP)
	$(BIN)/stuntset demo

# --- the tiers ------------------------------------------------------------------------------
# `make test` is the fast tier: lint, types and every all-fake test, no coverage. The tests
# marked with a tier (tests/_tiers.py: real_cli, browser, node, wheel, docs, slow) run in their own
# targets below; a test that starts a real binary, node, a browser or a package build without
# its tier's marker fails. `make ci` runs everything, as .ci/run does.
FAST := not real_cli and not browser and not node and not wheel and not docs and not slow
# every tier runs through the exit guard (stdlib only): a run that passes but leaves a resource
# unclosed (`ResourceWarning: unclosed …`, at the interpreter's exit or in a worker) fails
EXIT_CLEAN := $(PYTHON) tests/tools/exit_clean.py
PYTEST := $(EXIT_CLEAN) $(BIN)/pytest -p no:cacheprovider
# each pytest run keeps its durations (tests/_tiers.py), `make durations` prints the slowest 15
# of each tier
RESULTS := build/test-results

test: lint typecheck fast

fast: $(STAMP)
	$(PYTEST) -n auto -m "$(FAST)" --tier-durations=$(RESULTS)/fast.json

ci: test coverage legacy newest cassettes mocks wheel-smoke docs
	@$(MAKE) --no-print-directory durations

durations: $(STAMP)
	$(BIN)/python tests/tools/durations.py $(RESULTS)

# `make stress ROUNDS=5` runs the fast tier ROUNDS times with a busy loop on every core
# (bounded: MAX_SECONDS in all); a flake is a failure, never retried
ROUNDS ?= 5
MAX_SECONDS ?= 1800
stress: $(STAMP)
	$(BIN)/python tests/tools/stress.py --rounds $(ROUNDS) --max-seconds $(MAX_SECONDS) -- \
		$(PYTEST) -n auto -m "$(FAST)" -q

# all-fake tests over 0.5 s (tests/_tiers.py)
slow: $(STAMP)
	$(PYTEST) -n auto -m slow --tier-durations=$(RESULTS)/slow.json

# the real claude and codex binaries (bundled in the claude and codex extras' wheels) over the
# doubles: drift, the real-CLI interop and fidelity tests
real: $(STAMP)
	$(PYTEST) -n auto -m real_cli --tier-durations=$(RESULTS)/real.json

# the console and the trace viewer in a real Chromium (Debian's; .ci/run installs it)
browser: $(STAMP)
	$(PYTEST) -n auto -m browser --tier-durations=$(RESULTS)/browser.json

# node and the npm SDKs against the doubles and the fake CLIs: tests/node's locked packages
# (npm ci, only when package.json or the lock changed: the stamp), then the tests marked node
# (tests/node/test_node_sdks.py runs the `node --test` suites there)
NODE_DIR := tests/node
NODE_STAMP := $(NODE_DIR)/.npm-ci-stamp

$(NODE_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund
	touch $@

node: $(STAMP) $(NODE_STAMP)
	$(PYTEST) -n auto -m node --tier-durations=$(RESULTS)/node.json

# package builds and fresh venvs inside the suite (installed_package, declared imports)
wheel: $(STAMP)
	$(PYTEST) -n auto -m wheel --tier-durations=$(RESULTS)/wheel.json

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/ruff format --check src tests bench tools

typecheck: $(STAMP)
	$(BIN)/mypy --strict src

# The coverage gate: the whole suite (every tier), branch coverage of src/stuntset (the fake CLI processes and the tests'
# other Python subprocesses measure themselves too, see tests/conftest.py), in total and for
# every file: 95 and 90. Measured (covspeed, on main 2f90c79): 96.06% total; lowest files
# claude/_process/hooks.py 82.3 (new code without tests yet: the gate fails on it),
# drift/claude_session.py 90.0, providers/codex/_items.py 90.0, the rest 91.2 and above.
# Two things made whole runs differ: CPython 3.11 hides from coverage a frame resumed by a
# caught cancellation (cpython#106749: lines after an anyio cancel scope fired; judge after
# the awaits in a call of its own), and processes killed before saving their data.
COV_TOTAL := 95
COV_FILE := 90

# pytest-timeout's bound is a hang guard: measuring (in every fake CLI process too) makes the
# longest tests two to three times slower, so it is wider here
coverage: $(STAMP) $(NODE_STAMP)
	rm -f .coverage .coverage.*
	$(PYTEST) -n auto -m "not browser" -o timeout=300 --cov=stuntset --cov-branch --cov-report= \
		--tier-durations=$(RESULTS)/coverage.json
	$(PYTEST) -n auto -m browser -o timeout=300 --cov=stuntset --cov-branch --cov-append \
		--cov-config=tests/tools/coverage-greenlet.ini --cov-report=term \
		--tier-durations=$(RESULTS)/coverage-browser.json
	$(BIN)/python tests/tools/coverage_gate.py --total $(COV_TOTAL) --file $(COV_FILE)

# the doubles against an httpx-era client (openai 1.x), in its own environment
LEGACY := .venv-legacy
LEGACY_STAMP := $(LEGACY)/.stuntset-synced

legacy: $(LEGACY_STAMP)
	$(EXIT_CLEAN) $(LEGACY)/bin/pytest tests/legacy -q -p no:cacheprovider

$(LEGACY_STAMP): pyproject.toml uv.lock | $(UV)
	UV_PROJECT_ENVIRONMENT=$(CURDIR)/$(LEGACY) $(UV) sync --locked --compile-bytecode --no-default-groups --group legacy --python $(PYTHON)
	touch $@

# The newest versions the package declares, resolved afresh (no uv.lock: what `pip install
# stuntset[...]` gets today), with the dev group's tools pinned to them (--overrides), and
# the fast tier run there: a deprecation or a break in a new websockets, httpx2, openai or
# anthropic release fails here (filterwarnings = error) before a user meets it. Prints what
# differs from the lock. Needs the package index (the only network these machines have).
NEWEST := .venv-newest
EXTRAS := $(shell $(PYTHON) -c 'import tomllib; print(",".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]))')

newest: | $(UV)
	@mkdir -p build/newest
	$(UV) pip compile -q --no-header --upgrade --python $(PYTHON) pyproject.toml --all-extras \
		-o build/newest/package.txt
	$(UV) export -q --frozen --all-extras --no-dev --no-hashes --no-header -o build/newest/locked.txt
	@echo "make newest: the package's dependencies, newest against uv.lock:"
	@# pins for this platform only (the lock also holds win32 and emscripten ones)
	@for f in locked package; do grep -v -E "sys_platform == '(win32|emscripten)'" \
		build/newest/$$f.txt | sed -E 's/[ ;].*//' | grep -E '^[a-z0-9]' | sort \
		> build/newest/$$f.pins; done
	@diff build/newest/locked.pins build/newest/package.pins | grep '^[<>]' || echo "  (the same)"
	test -x $(NEWEST)/bin/python || $(UV) venv -q --python $(PYTHON) $(NEWEST)
	$(UV) pip install -q --python $(NEWEST)/bin/python --compile-bytecode -e ".[$(EXTRAS)]" \
		--group pyproject.toml:dev --overrides build/newest/package.txt
	$(EXIT_CLEAN) $(NEWEST)/bin/pytest -p no:cacheprovider -n auto -m "$(FAST)" \
		--tier-durations=$(RESULTS)/newest.json

# no cassette or JSONL file in the tree may hold a secret, and every committed cassette is in
# the current format (blocks in its folder's _blocks.jsonl): `stuntset cassettes migrate .`
# rewrites the ones that are not
cassettes: $(STAMP)
	$(BIN)/stuntset cassettes verify .
	$(BIN)/stuntset cassettes migrate --check .

# fakes over mocks: no unittest.mock.patch of our own code (the baseline is empty)
mocks: $(STAMP)
	$(BIN)/stuntset lint-mocks tests bench

# the built sdist and wheel installed as a user gets them, bare and with each extra, in
# fresh venvs outside the tree: the CLI, the plugin's fixtures, the README's examples
wheel-smoke: $(STAMP)
	$(BIN)/python tests/wheel/smoke.py --uv $(UV) --python $(PYTHON)

# the user's guide (mkdocs.yml) into build/site, warnings as errors, offline; its examples
# run here too (tests/examples/test_docs.py, marked docs); not --quiet, which hides the warnings
# --strict counts (it then passes with a broken link). `.venv/bin/mkdocs serve` serves it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(PYTEST) -n auto -m docs --tier-durations=$(RESULTS)/docs.json

sync: $(STAMP)

# --compile-bytecode: these machines set PYTHONDONTWRITEBYTECODE, so nothing is ever cached
# by imports; compiled once here, every interpreter start (pytest, its workers, the CLI) skips
# recompiling the dependencies' sources
$(STAMP): pyproject.toml uv.lock | $(UV)
	$(UV) sync --locked --compile-bytecode --all-extras --python $(PYTHON)
	touch $@

# --inexact: a venv synced in full (by `make test`) keeps its dev group; the demo's own sync
# only adds what the base install lacks. No --compile-bytecode: the demo imports a few hundred
# of the venv's files, compiled (and cached) as they are imported.
$(DEMO_STAMP): pyproject.toml uv.lock | $(UV)
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt uv.lock ] && [ $(STAMP) -nt pyproject.toml ]; then \
		echo "make demo: using the full venv ($(VENV))"; \
	else \
		echo "make demo: installing the base install into $(VENV) (uv sync, locked, no dev group)"; \
		$(UV) sync --locked --inexact --no-default-groups --no-dev --python $(PYTHON); \
	fi
	touch $@

$(CURDIR)/.tools/bin/uv:
	@echo "installing uv $(UV_VERSION) into .tools (not on PATH)"
	@# the interpreter's own pip installs into a venv made without one (ensurepip costs 5-30 s);
	@# a Python whose pip cannot (none, or older than 22.3) gets a venv with a pip of its own
	$(PYTHON) -m venv --without-pip .tools
	$(PYTHON) -m pip --python .tools/bin/python install --quiet --disable-pip-version-check \
		"uv==$(UV_VERSION)" 2>/dev/null || { rm -rf .tools && $(PYTHON) -m venv .tools && \
		.tools/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"; }

clean:
	rm -rf .venv .venv-legacy .venv-newest .tools .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.* htmlcov dist build

bench: $(STAMP)
	$(BIN)/python -m bench $(CASES)
