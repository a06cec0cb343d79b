# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test test-harness test-floors lint format docs docs-serve services chromium tinyproxy nginx screenshots bench chaos soak clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Python 3.11 or newer is needed (found $$($(PYTHON) --version))"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

services:
	@scripts/ensure-services.sh

# A laptop's key for secrets at rest, made on first start; production sets SVC_SECRET_KEY.
SECRET_KEY_FILE := .svc/secret-key

$(SECRET_KEY_FILE): | $(STAMP)
	@mkdir -p $(dir $@) && umask 077 && $(BIN)/svc secrets new-key > $@
	@echo "generated a local SVC_SECRET_KEY in $(SECRET_KEY_FILE) (keep it: stored signing secrets need it)"

run: $(STAMP) $(SECRET_KEY_FILE)
	@scripts/ensure-services.sh --database svc
	$(BIN)/svc migrate
	@echo "API on http://127.0.0.1:$${SVC_HTTP_PORT:-8080} (readiness and metrics on port $${SVC_OPS_PORT:-9090}); next, in another terminal, docs/getting-started.md: KEY=\$$($(BIN)/svc keys create --env test --org acme)"
	SVC_SECRET_KEY="$${SVC_SECRET_KEY:-$$(cat $(SECRET_KEY_FILE))}" SVC_ALLOW_PRIVATE_TARGETS=true \
		SVC_RATE_LIMIT_TEST="$${SVC_RATE_LIMIT_TEST:-25}" SVC_RATE_LIMIT_LIVE="$${SVC_RATE_LIMIT_LIVE:-100}" SVC_DASHBOARD_SECURE_COOKIES=false $(BIN)/svc run

# The suite on pytest-xdist workers, two per core as its tests mostly wait (docs/development.md
# says how that was chosen and how long it takes); TEST_WORKERS=0 runs it in this process alone.
# The harness smoke runs are left to make test-harness.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))

test: $(STAMP) services chromium tinyproxy nginx
	$(BIN)/pytest -n $(TEST_WORKERS) -m "not harness"

# The benchmark and fault-suite harnesses end to end with tiny counts (python -m benchmarks
# --smoke, the Celery and Dramatiq comparisons among them, and python -m chaos --smoke), so
# that make bench and make chaos cannot rot; one at a time, as each takes the machine.
test-harness: $(STAMP) services nginx
	$(BIN)/pytest -m harness

# The unit tests and the integration tests of delivery and the API against the lowest versions
# pyproject.toml allows, in a virtualenv of their own (.venv-floors, built on first use).
test-floors: services
	PYTHON=$(PYTHON) scripts/test-floors.sh

# The dashboard's browser tests drive Debian's Chromium; Playwright never downloads a browser.
chromium:
	@[ -x /usr/bin/chromium ] || { \
		echo "installing Debian's chromium, the browser of the dashboard tests"; \
		sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq chromium; }

# The benchmarks' receivers (harness/nginx.py): Debian nginx and its echo module.
nginx:
	@{ command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; } && [ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ] || { \
		echo "installing Debian nginx and its echo module, the benchmarks' receivers"; \
		sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq nginx libnginx-mod-http-echo; }

# The egress proxy's tests send deliveries through a real forward proxy, Debian's tinyproxy.
tinyproxy:
	@[ -x /usr/bin/tinyproxy ] || { \
		echo "installing Debian's tinyproxy, the forward proxy of the egress tests"; \
		sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq tinyproxy; }

# Screenshots of the dashboard's main pages and the API reference, taken by the browser tests,
# for the docs.
screenshots: $(STAMP) services chromium
	SVC_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q tests/dashboard/test_browser.py tests/portal/test_browser.py

# The full comparison (about 40 minutes, the listing and the API's sections included); results go to
# benchmarks/results and benchmarks/README.md; python -m benchmarks --smoke runs it with tiny counts.
bench: $(STAMP) services nginx
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m benchmarks --wait-load 0.7 --readme benchmarks/README.md

# The fault suite (about 15 minutes) on private RabbitMQ, PostgreSQL and Redis servers of its own;
# results go to chaos/results and chaos/README.md. Exits non-zero if an event was lost or a
# payment doubled.
chaos: $(STAMP)
	$(BIN)/python -m chaos

# The suite's load for 30 minutes with nothing broken, sampling memory, open files, database
# connections, Redis and queues every minute; the table goes to chaos/README.md and
# chaos/results. Exits non-zero if something grew, an event was lost or a payment doubled.
soak: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m chaos.soak --readme chaos/README.md

# The documentation site (MkDocs Material, the docs extra) from mkdocs.yml and docs/ into site/;
# strict, so a broken link or a page left out of the navigation fails the build.
DOCS_STAMP := $(VENV)/.docs-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

$(DOCS_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[docs]'
	@rm -f $(VENV)/.docs-* && touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The site on http://127.0.0.1:8000, rebuilt on every change.
docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict

# Style, types, layers, and no regular expression of the input layer that backtracks
# (tests/security/test_patterns.py: a few seconds, no services).
lint: $(STAMP)
	$(BIN)/ruff check svc api scheduler dispatcher cli tests benchmarks chaos harness
	$(BIN)/ruff format --check svc api scheduler dispatcher cli tests benchmarks chaos harness
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python scripts/import-graph.py
	$(BIN)/pytest -q -p no:cacheprovider tests/security/test_patterns.py
	@f=$$(mktemp --suffix=.json) && $(BIN)/python -c 'import json, api.description as d; print(json.dumps(d.document()))' >$$f && npx --yes @redocly/cli@2.77.0 lint --config redocly.yaml --format=stylish $$f; s=$$?; rm -f $$f; exit $$s

format: $(STAMP)
	$(BIN)/ruff check --fix svc api scheduler dispatcher cli tests benchmarks chaos harness
	$(BIN)/ruff format svc api scheduler dispatcher cli tests benchmarks chaos harness

clean:
	rm -rf $(VENV) .venv-floors .pytest_cache .mypy_cache .ruff_cache
