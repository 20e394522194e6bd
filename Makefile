# copylab: thin entry points. The logic lives in native/ (C) and lib/copylab (Python).
#   make report   sweep the default grid, then write the PDF/HTML report (prints the PDF path last)
#   make test     the test suite (what CI runs)
#   make check    the fast subset: no root, no namespaces, nothing slow (under a minute)
#   make bundle   ROLL=<roll no.>: the course submission <ROLL>_PA02/ + .zip from RESULTS (output/default);
#                 refused while author fields or the declaration are placeholders, unless DRAFT=1
#   make lab      JupyterLab on RESULTS (output/default): prints the one URL to open; PORT=<n> to choose
#                 its port (default: the first free one from 8888)
#   make compare  A=<sweep folder> B=<sweep folder>: every change from A to B decided (output/compare-A-vs-B/)
PYTHON  ?= python3
PARAMS  ?= params/default.yaml
RESULTS ?= output/default
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-from-pyproject

.PHONY: report test check sweep lab native deps clean clean-output doctor bundle compare

# copylab's own modules compiled once: where PYTHONDONTWRITEBYTECODE is set (it is on the development
# VM) every process compiled them from source again, 0.2 s of CPU each, and make test starts hundreds
BYTECODE := $(PY) -m compileall -q -j 0 lib/copylab
# pytest keeps each test module's rewritten code (its assertions' messages) under tests/__pycache__,
# which PYTHONDONTWRITEBYTECODE forbids: every pytest process, each xdist worker, rewrote the whole
# suite again, 4.5 s of CPU each (2026-11-28; make check's minute, issue 48). Empty is unset.
PYTEST_ENV := PYTHONDONTWRITEBYTECODE=

report: deps $(STAMP)
	@$(BYTECODE)
	$(PY) -m copylab sweep $(PARAMS) --report

# in parallel, two workers per CPU: a third of the suite's time is spent waiting on clocks (runs'
# windows, timeouts, servers starting), which a CPU's second worker fills (2 vCPUs, 2026-11-26:
# 10 min 4 s on 2 workers, 8 min 52 s on 4). native/ is built first: every worker's sweeps run make
# in it, which must find nothing to do. tools/testsuite.py runs the phases: the tests that must have
# the host to themselves (`alone`) first, one after another, then the rest on the workers (the tests
# of one real sweep together, tests/conftest.py); a test that failed in either is run once more,
# alone, and its verdict is that run's. The retry is a safety net, not a pass: the last line names
# every test it rescued, and each run appends its record to output/make-test.jsonl
# (tools/measurements.py from-test-runs counts them). The exit status is the retry's, or 0.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))
test: deps $(STAMP)
	$(MAKE) -s -C native all sanitize
	@$(BYTECODE)
	@$(PYTEST_ENV) $(PY) tools/testsuite.py --workers $(TEST_WORKERS)

# the tests marked neither root, network nor slow (tests/conftest.py holds the markers true), on one
# worker per CPU: one after another they passed a minute on 2026-11-26 (765 tests). They compute
# rather than wait on clocks, so make test's second worker per CPU found no idle CPU to fill here,
# and cost: each worker starts pytest and collects the whole suite (5 s of CPU, best of five,
# 2026-11-28) and builds again the module fixtures of the modules it runs tests of (a Study, the
# figures: seconds each)
CHECK_WORKERS ?= $(shell nproc)
check: deps $(STAMP)
	@$(BYTECODE)
	$(PYTEST_ENV) $(PY) -m pytest -q -n $(CHECK_WORKERS) --dist loadgroup -m "not root and not network and not slow"

sweep: deps $(STAMP)
	$(PY) -m copylab sweep $(PARAMS)

# without ROLL the roll number comes from the report or the params YAML; none at all is refused
bundle: deps $(STAMP)
	$(PY) -m copylab bundle $(RESULTS) $(if $(ROLL),--roll '$(ROLL)') $(if $(DRAFT),--draft)

# JupyterLab on RESULTS, at a working copy of the analysis (RESULTS/work/); templates stay untouched
lab: deps $(STAMP)
	@$(PY) -m copylab lab '$(RESULTS)' $(if $(PORT),--port '$(PORT)')

# two sweeps compared (OUT=<folder> to choose where; LABEL_A/LABEL_B to name them); A and B stay untouched
compare: deps $(STAMP)
	@test -n '$(A)' -a -n '$(B)' || { echo "make compare: give both sweeps: make compare A=output/x B=output/y" >&2; exit 2; }
	$(PY) -m copylab compare '$(A)' '$(B)' $(if $(OUT),--out '$(OUT)') $(if $(LABEL_A),--label-a '$(LABEL_A)') $(if $(LABEL_B),--label-b '$(LABEL_B)')

doctor: $(STAMP)
	$(PY) -m copylab doctor

native: deps
	$(MAKE) -C native

# Debian packages (compiler, perf, iproute2, chromium, LaTeX...): installed when missing, as root
deps:
	@bash tools/install-debian-deps.sh

# (re)create the virtualenv whenever pyproject.toml changes. copylab's nbconvert settings go on the
# environment's own Jupyter config path (etc/jupyter), so that `jupyter nbconvert` of any copylab notebook
# is offline (and --to webpdf finds the installed Chromium) without JUPYTER_CONFIG_PATH: a loader of the
# package's settings (an editable install installs no data files, so it is copied here)
JUPYTER_LOADER := lib/copylab/jupyter_config/env/jupyter_nbconvert_config.py
$(STAMP): pyproject.toml $(JUPYTER_LOADER)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	install -D -m 644 $(JUPYTER_LOADER) $(VENV)/etc/jupyter/jupyter_nbconvert_config.py
	@touch $(STAMP)

# build products and leftovers only; measured results under output/ stay (see clean-output)
clean:
	$(MAKE) -C native clean
	-test -x $(PY) && $(PY) -m copylab clean
	rm -rf .pytest_cache lib/copylab/__pycache__ tests/__pycache__

# deletes every sweep's results: only when asked by name
clean-output:
	@echo "this deletes every measured result under output/ (type 'yes' to go on)"; read answer; [ "$$answer" = yes ]
	find output -mindepth 1 -not -name .gitkeep -delete
