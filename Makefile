# Every target works from a fresh clone: `install` builds .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: install test lint demo demo-tune bench horovod-env clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[local,test]'
	# The container toolkits, for the conformance test of local runs. Their own pins (numpy<1.24,
	# protobuf<=3.20) fight TensorFlow's, and only the code is needed: no dependencies.
	$(BIN)/pip install --quiet --no-deps sagemaker-training==4.8.3 sagemaker-tensorflow-training==20.5.0
	touch $(STAMP)

install: $(STAMP)

# The Horovod tests need TF 2.13 + Horovod 0.28.1, built once into a cache outside the repo.
horovod-env:
	bash scripts/horovod-env.sh

test: install horovod-env
	$(BIN)/pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check smtrain entrypoints tests bench

demo: install
	bash scripts/demo.sh

# The digits demo tuned here over learning rate and batch size: trials one after another, then the table.
demo-tune: install
	$(BIN)/python -m smtrain.local.demo_data $${SMTRAIN_DEMO_DATA:-.demo/digits}
	$(BIN)/smtrain tune configs/tune-digits.yaml --local

bench: install
	$(BIN)/python bench/run.py --out bench/results.json

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
