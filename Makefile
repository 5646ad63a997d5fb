# Every target works from a fresh clone: `install` builds .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: install test docs docs-screenshots moto lint demo demo-tune bench bench-install mutation horovod-env sdk-v2-env sdk-v3-env tf-registries clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[local,test,docs]'
	# The container toolkits, for the conformance test of local runs: the pair the TF 2.21 training image carries
	# (aws/deep-learning-containers' Dockerfile). Their own pins fight TensorFlow's, and only the code is
	# needed: no dependencies.
	$(BIN)/pip install --quiet --no-deps sagemaker-training==5.1.1 sagemaker-tensorflow-training==20.4.1
	touch $(STAMP)

install: $(STAMP)

# The Horovod tests need TF 2.13 + Horovod 0.28.1, built once into a cache outside the repo.
horovod-env:
	bash scripts/horovod-env.sh

# SDK v2 alone in a venv of its own (tests/support/sdk_envs.py), built once into a cache outside the repo
# (under a minute from the package index): tests/cli/test_sdk_beside.py installs smtrain beside it.
sdk-v2-env: install
	$(BIN)/python -m tests.support.sdk_envs v2

# SDK v3 (sagemaker-core>=2.27) in a venv of its own, cached the same way: tests/plan/test_tf_registries_sdk.py
# checks smtrain's image registry data against its table (v2 and v3 cannot share an environment).
sdk-v3-env: install
	$(BIN)/python -m tests.support.sdk_envs v3

# Rewrite smtrain/plan/data/tf_registries.yaml from SDK v2's table (.venv), SDK v3's and botocore's ECR hosts.
tf-registries: install sdk-v3-env
	$(BIN)/python -m tests.tools.tf_registries

# Two workers (pytest-xdist): the machine CI runs on has two cores; PYTEST_WORKERS=0 runs the suite in one process.
# worksteal: a worker that runs out takes tests queued for the other, so the suite does not end on one worker
# running the long tests it was handed early (with the default `load`, the suite's last minutes ran on one).
PYTEST_WORKERS ?= 2
test: install lint docs horovod-env sdk-v2-env sdk-v3-env
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# The documentation site into site/, from docs/ (the spec, CLI and API reference generated from the code):
# --strict, so a broken link, a page missing from the nav or an entry without its description fails it (not with
# --quiet: it silences the warnings --strict counts, and the build passes).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The built site's home and spec-reference pages in headless Chromium: build/screenshots/*.png. Installs Debian's
# chromium the first time (apt, as root or through sudo).
docs-screenshots: docs
	bash scripts/docs-screenshots.sh

# moto's server as a stand-in for AWS, with the examples' bucket: docs/guides/moto.md. MOTO_PORT=5000 by default.
moto: install
	bash scripts/moto.sh

# ruff, then the import rules (import-linter's contracts in pyproject.toml: the stages, smtrain_tf's layers).
lint: install
	$(BIN)/ruff check smtrain entrypoints tests bench scripts
	$(BIN)/lint-imports --no-cache --no-logo

# Mutation testing of the core modules (tests/tools/mutation.py): a sample of cosmic-ray's mutants sized to
# MUTATION_MINUTES, the report and the survivors in build/mutation/. cosmic-ray has a venv of its own (its
# dependencies stay out of the tests'). Not part of CI.
MUTATION_VENV := .venv-mutation
MUTATION_MINUTES ?= 30
MUTATION_ARGS ?=
$(MUTATION_VENV)/.installed:
	$(PYTHON) -m venv $(MUTATION_VENV)
	$(MUTATION_VENV)/bin/pip install --quiet cosmic-ray==8.7.0
	touch $@

mutation: install $(MUTATION_VENV)/.installed
	$(MUTATION_VENV)/bin/python -m tests.tools.mutation --python $(BIN)/python --minutes $(MUTATION_MINUTES) $(MUTATION_ARGS)

demo: install
	bash scripts/demo.sh

# The digits demo tuned here over learning rate and batch size: trials one after another, then the table.
demo-tune: install
	$(BIN)/python -m smtrain.local.demo_data $${SMTRAIN_DEMO_DATA:-.demo/digits}
	$(BIN)/smtrain tune configs/tune-digits.yaml --local

bench: install
	$(BIN)/python bench/run.py --out bench/results.json

# The installed size of `pip install smtrain` alone (the wheel of git's BEFORE and the working tree's, each in a
# fresh venv, dependencies from the index: minutes), merged into bench/results.json. BEFORE=42dbe71 is the last
# commit whose smtrain required the SageMaker SDK.
BEFORE ?= HEAD
bench-install: install
	$(BIN)/python bench/run.py --out bench/results.json --only-install-size --before $(BEFORE)

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache
