# Boulevard. `make run` and `make test` work on a fresh machine: they create .venv first.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
BUF     := tools/buf/node_modules/.bin/buf
BGIO    := bench/bgio/node_modules/boardgame.io/package.json

.DEFAULT_GOAL := help
.PHONY: help setup proto proto-check web nats-config run test test-unit test-integration explore lint format bench bench-bgio clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The buf CLI from npm (@bufbuild/buf ships its binary), pinned by the committed lock file.
$(BUF): tools/buf/package.json tools/buf/package-lock.json
	npm ci --prefix tools/buf --no-audit --no-fund --silent
	touch $(BUF)

# boardgame.io for the side-by-side bench (bench/bgio.py), pinned by the committed lock file.
$(BGIO): bench/bgio/package.json bench/bgio/package-lock.json
	npm ci --prefix bench/bgio --no-audit --no-fund --silent
	touch $(BGIO)

setup: $(STAMP) ## create .venv and install Boulevard with its dev tools

proto: $(STAMP) ## regenerate libs/boulevard/api from protos/ (and the web app, which embeds them)
	$(BIN)/python tools/gen_protos.py
	$(MAKE) web

proto-check: $(STAMP) ## fail if the committed generated code drifted from protos/
	$(BIN)/python tools/gen_protos.py --check

web: ## rebuild the web app (web/, TypeScript) into libs/boulevard/web/static with npm
	cd web && npm ci --no-audit --no-fund && node build.mjs

nats-config: $(STAMP) ## render deploy/nats/nats-permissions.conf (+ its k8s copy) from the identities code
	$(BIN)/python tools/render_nats_config.py

run: $(STAMP) ## start NATS + the four services and play a demo game (Ctrl-C stops)
	$(BIN)/boulevard up

# The unit tier is pure and CPU-bound (the property tests): it runs on every core with
# pytest-xdist, its workers sharing nothing (each test its own tmp_path and free ports; the
# Hypothesis profiles use no example database). Integration and e2e tests share ports,
# nats-servers and network namespaces and are tuned to run one at a time: they run after it,
# in one process. Both parts always run; `make test` fails if either does.
UNIT := $(BIN)/pytest -n auto --dist worksteal tests/unit

test: $(STAMP) ## the whole suite: unit (on every core), then integration (real nats-server) and e2e
	@status=0; $(UNIT) || status=$$?; $(BIN)/pytest --ignore=tests/unit && exit $$status

test-unit: $(STAMP) ## pure tests only, no I/O, on every core
	$(UNIT)

explore: $(STAMP) ## the property tests with fresh random examples (make test draws the same ones each run)
	HYPOTHESIS_PROFILE=explore $(UNIT)

lint: $(STAMP) $(BUF) ## ruff, mypy --strict, rules versions, buf lint + breaking vs the last release
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy libs services tools
	$(BIN)/python tools/rules_versions.py check
	$(BIN)/python tools/buf_check.py

format: $(STAMP) ## apply ruff's formatting and safe fixes
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(STAMP) $(BGIO) ## run every benchmark under bench/ and print its figures
	@for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

bench-bgio: $(STAMP) $(BGIO) ## boardgame.io 0.50.2 beside Boulevard, both playing Las Vegas, one run
	$(BIN)/python bench/bgio.py

clean: ## remove the venv, caches and local data
	rm -rf $(VENV) .data .pytest_cache .mypy_cache .ruff_cache .hypothesis build *.egg-info
