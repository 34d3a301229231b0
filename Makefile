# Developer shortcuts; CI runs .ci/run (lint + types + every test).
.PHONY: install test test-all lint format types bench eval

install:
	pip install -e '.[test]'

test:            ## the fast suite (under a minute on 2 cores)
	pytest -q

test-all:        ## every test, slow ones included (what CI runs)
	pytest -q --all

lint:            ## ruff check + format check + mypy, as CI does
	ruff check memd tests bench
	ruff format --check memd tests bench
	mypy

format:
	ruff check --fix memd tests bench
	ruff format memd tests bench

types:
	mypy

bench:           ## speed figures (print numbers; compare runs side by side)
	python bench/bench_consolidate.py
	python bench/bench_index.py
	python bench/bench_add_during_consolidation.py

eval:            ## retrieval quality on the development slice
	memd eval locomo ../shared/data/locomo-dev.json
