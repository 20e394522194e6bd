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

report: deps $(STAMP)
	@$(BYTECODE)
	$(PY) -m copylab sweep $(PARAMS) --report

# in parallel, two workers per CPU: a third of the suite's time is spent waiting on clocks (runs'
# windows, timeouts, servers starting), which a CPU's second worker fills (2 vCPUs, 2026-11-26:
# 10 min 4 s on 2 workers, 8 min 52 s on 4). The tests of one real sweep stay together
# (tests/conftest.py). The tests that must have the host to themselves (`alone`: they measure its
# CPU load, or switch io_uring off for all) run first, one after another: among the workers each
# waited for every other worker's current test, a minute and more when that was a real sweep or
# the browser, with three workers idle. native/ is built first: every worker's sweeps run make in
# it, which must find nothing to do. A test that failed in either phase is run once more, alone on
# the host, and named: the suite drives real namespaces, servers and clocks on 2 vCPUs shared by
# 4 workers, so a failure beside the others is reported as such, and the verdict is the failure
# alone (one in two fresh-clone runs on 2026-11-26 had one such test, each a race between workers
# mended since). The exit status is the retry's, or 0 when nothing failed.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))
test: deps $(STAMP)
	$(MAKE) -s -C native all sanitize
	@$(BYTECODE)
	@status=0; \
	$(PY) -m pytest --cache-clear -m alone || status=$$?; \
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not alone" || { [ $$status -ne 0 ] || status=$$?; }; \
	if [ $$status -ne 0 ]; then \
	  echo "make test: the tests that failed above are run again, one after another, with nothing beside them:"; \
	  $(PY) -m pytest --last-failed --last-failed-no-failures none -ra || exit $$?; \
	  echo "make test: they passed alone: they failed beside other tests (named above), not on their own"; \
	fi

# the tests marked neither root, network nor slow (tests/conftest.py holds the markers true), on the
# workers too: one after another they passed a minute on 2026-11-26 (765 tests)
check: deps $(STAMP)
	@$(BYTECODE)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not root and not network and not slow"

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
