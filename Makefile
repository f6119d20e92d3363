# Stallscope — `make run` serves the app with a demo analysis; `make test` runs every test.
# Both install what they need first (a virtualenv, npm packages, the frontend build, Chromium for e2e, trace-cmd and
# its libraries, and perf for trace.dat and perf.data uploads).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STALLSCOPE_DB ?= data/stallscope.duckdb
STALLSCOPE_HOST ?= 127.0.0.1
STALLSCOPE_PORT ?= 8000
export STALLSCOPE_DB STALLSCOPE_HOST STALLSCOPE_PORT
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: lab run serve test test-py test-unit test-e2e lint build bench openapi chromium trace-cmd perf clean

run: $(VENV)/.installed parsers/tracedat-records frontend/dist/index.html trace-cmd perf
	$(VENV)/bin/stallscope serve --demo

$(VENV)/.installed: pyproject.toml setup.py $(wildcard parsers/_*.c parsers/_*.h) | trace-cmd
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11+ is needed (set PYTHON=...)")'
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

node_modules/.installed: package.json package-lock.json frontend/package.json e2e/package.json
	npm ci --no-audit --no-fund
	touch $@

frontend/dist/index.html: node_modules/.installed $(shell find frontend/src frontend/index.html frontend/*.ts -type f 2>/dev/null)
	npm run build

build: frontend/dist/index.html

openapi: $(VENV)/.installed
	$(PY) -m backend.openapi > frontend/openapi.json
	npm run gen:api

chromium:
	@[ -x /usr/bin/chromium ] || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; }

# trace.dat uploads are decoded by libtracecmd in parsers/tracedat-records (setup.py builds it when its libraries are
# there), or by `trace-cmd report` without it (parsers/tracedat.py)
DECODER_LIBS := libtracecmd libtraceevent
trace-cmd:
	@command -v trace-cmd >/dev/null && pkg-config --exists $(DECODER_LIBS) 2>/dev/null || { $(SUDO) apt-get update -q && \
		$(SUDO) apt-get install -y -q trace-cmd pkg-config libtracecmd-dev libtracefs-dev libtraceevent-dev; }

parsers/tracedat-records: parsers/tracedat_records.c $(wildcard parsers/tracedat_*.h) | trace-cmd
	$${CC:-cc} -O2 -std=c11 -Wall -Wextra -o $@ $< $$(pkg-config --cflags --libs $(DECODER_LIBS))

# perf.data uploads are decoded by `perf script` (parsers/perfdata.py)
perf:
	@command -v perf >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q linux-perf; }

test: $(VENV)/.installed parsers/tracedat-records node_modules/.installed build chromium trace-cmd perf
	npm run lint:compose
	$(MAKE) lint
	$(PY) -m pytest
	npm run test:unit
	npm run test:e2e

# Linters: ruff's checks and format for Python (pinned and configured in pyproject.toml), ESLint for the frontend
# (frontend/eslint.config.js), and each C tokenizer (and the trace.dat decoder) compiled with setup.py's flags, its
# warnings as errors.
lint: $(VENV)/.installed node_modules/.installed
	$(VENV)/bin/ruff check backend tests parsers bench setup.py
	$(VENV)/bin/ruff format --check backend tests parsers bench setup.py
	npm run lint
	@include=$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])'); \
	for src in parsers/_*.c; do \
		echo "cc -Wall -Wextra -Werror $$src"; \
		$${CC:-cc} -c -o /dev/null -O2 -std=c11 -Wall -Wextra -Werror -pthread -fPIC -I"$$include" $$src || exit 1; \
	done
	@! pkg-config --exists $(DECODER_LIBS) || { echo "cc -Wall -Wextra -Werror parsers/tracedat_records.c"; \
		$${CC:-cc} -c -o /dev/null -O2 -std=c11 -Wall -Wextra -Werror $$(pkg-config --cflags $(DECODER_LIBS)) \
		parsers/tracedat_records.c; }

test-py: $(VENV)/.installed parsers/tracedat-records trace-cmd perf
	$(PY) -m pytest

test-unit: node_modules/.installed
	npm run test:unit

test-e2e: $(VENV)/.installed build chromium
	npm run test:e2e

# The benchmark of a 10 M-event analysis (docs/BENCHMARKS.md): ingest, API, server memory, page ready.
# BENCH_ARGS="--parts api,page --reuse" runs some parts; BENCH_* variables scale it (bench/inputs.py).
bench: $(VENV)/.installed build chromium
	$(PY) -m bench.run $(BENCH_ARGS)

# The lab: records each scenario's stall on a real Linux kernel in a virtual machine (lab/README.md) into
# samples/real/NAME/. `make lab SCENARIO=NAME` records one; `make lab` all of them. Needs root (debootstrap, once).
SCENARIO ?= $(notdir $(basename $(wildcard lab/scenarios/*.sh)))
lab:
	@command -v qemu-system-x86_64 >/dev/null && command -v debootstrap >/dev/null && command -v blkparse >/dev/null || \
		{ $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q qemu-system-x86 debootstrap e2fsprogs blktrace trace-cmd; }
	@for s in $(SCENARIO); do $(SUDO) bash lab/run.sh $$s || exit 1; done

clean:
	rm -rf $(VENV) node_modules frontend/dist build *.egg-info bench-out
