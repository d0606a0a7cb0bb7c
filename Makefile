# gpudirect.storage — developer entry points. Run as root on Debian 12 (the lab needs
# namespaces, mounts and systemd-nspawn). `make demo` and `make test` are the two commands.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
N ?= 3
LAB := lab/labctl
# labctl's lab names are machine-wide: name this checkout's lab after its path, so that a second
# checkout's `make demo` / `make lab-down` never tears down this one's (hosts <LAB_NAME>-01 ...)
LAB_NAME ?= lab-$(shell printf %s "$(CURDIR)" | sha256sum | cut -c1-6)
LAB_INVENTORY := inventories/lab/hosts.yml
COLLECTION_LINK := build/collections/ansible_collections/gpudirect/storage
SANITY_ROOT := build/sanity/ansible_collections/gpudirect/storage
PY312 ?= /root/.pyenv/versions/3.12.1/bin/python3
# The lab settings (lab inventory, no host key checking); the root ansible.cfg is the safe one.
export ANSIBLE_CONFIG := $(CURDIR)/lab/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: help venv deps aptrepo collection-link lab-up lab-down lab-status demo test test-unit \
        test-sanity test-lint test-k8s test-system bench bench-k8s build lock ansible-test-offline clean demo-k8s

help:
	@echo "make demo        venv + lab (N=$(N)) + playbooks/site.yml + verify.yml, prints the result"
	@echo "make demo-k8s    playbooks/k8s.yml against the API emulator with N simulated GPU nodes, prints the report"
	@echo "make test        every test: unit, sanity, lint, lab, molecule, integration (pytest summary last)"
	@echo "make venv        controller virtualenv from requirements/controller.txt"
	@echo "make lab-up N=3  bring up N Debian 12 lab hosts ($(LAB_NAME)-01 ...); make lab-down tears them down"
	@echo "make bench       benchmarks on the lab (N=3 and N=20), ratios in bench/RESULTS.md"

$(BIN)/.stamp: requirements/controller.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements/controller.txt
	touch $@

venv: $(BIN)/.stamp collection-link

deps:
	tests/utils/install-system-deps.sh

collection-link:
	@mkdir -p $(dir $(COLLECTION_LINK))
	@[ -L $(COLLECTION_LINK) ] || ln -s ../../../.. $(COLLECTION_LINK)

aptrepo: venv
	$(BIN)/python tests/fixtures/aptrepo/build.py --out build/aptrepo tests/fixtures/aptrepo/*.yml
	$(BIN)/python tests/fixtures/rpmrepo/build.py --out build/aptrepo/el9 tests/fixtures/aptrepo/*.yml

lab-up: deps aptrepo
	$(LAB) up --name $(LAB_NAME) --n $(N) --serve build/aptrepo --inventory $(LAB_INVENTORY)

lab-down:
	$(LAB) down --name $(LAB_NAME)
	rm -f $(LAB_INVENTORY)

lab-status:
	$(LAB) status --name $(LAB_NAME)

demo: venv lab-up
	$(BIN)/ansible-playbook lab/prepare.yml
	$(BIN)/ansible-playbook playbooks/site.yml
	$(BIN)/ansible-playbook playbooks/verify.yml
	@echo
	@echo "demo: lab/prepare.yml, playbooks/site.yml and playbooks/verify.yml ran against $(N) lab hosts ($(LAB_INVENTORY))."
	@cat reports/gds-fleet.md
	@echo
	@echo "demo: fleet report: $(CURDIR)/reports/gds-fleet.html (also gds-fleet.json, gds-fleet.md)"
	@echo "demo: the lab stays up for inspection; 'make lab-down' removes it."
	@echo "demo: to run the README's commands yourself: source .venv/bin/activate (the tools are in .venv/bin)"

# The Kubernetes path without a cluster: the API emulator, its simulated kubelet REALLY running
# each probe pod (C stand-ins of libcuda/libcufile), real helm, then the fleet report.
demo-k8s: venv
	$(BIN)/python tests/fixtures/k8s_emulator/demo_k8s.py --nodes $(N)

# Everything. pytest orchestrates the slow suites too (tests/system), so its summary line is
# the last thing printed.
test: venv deps ansible-test-offline
	$(BIN)/pytest -p no:cacheprovider -p no:pytest-ansible -ra tests/unit tests/system tests/integration/gpu_operator tests/integration/gds_node_probe

test-unit: venv
	$(BIN)/pytest -p no:cacheprovider -p no:pytest-ansible -q tests/unit

test-sanity: venv ansible-test-offline
	$(BIN)/pytest -p no:cacheprovider -p no:pytest-ansible -q tests/system/test_sanity.py

test-lint: venv
	$(BIN)/ansible-lint --offline

test-k8s: venv
	$(BIN)/pytest -p no:cacheprovider -p no:pytest-ansible -q tests/integration/gpu_operator tests/integration/gds_node_probe

test-system: venv deps ansible-test-offline
	$(BIN)/pytest -p no:cacheprovider -p no:pytest-ansible -ra tests/system

ansible-test-offline:
	tests/utils/ansible-test-offline.sh

bench: venv deps
	bench/run

# gds_node_probe wall time on 1, 10 and 50 simulated GPU nodes (emulator), ratio 50/1 printed.
bench-k8s: venv
	$(BIN)/python bench/k8s-node-probe

build: venv
	$(BIN)/ansible-galaxy collection build --force --output-path build/

lock:
	$(PYTHON) -m venv build/lockvenv
	build/lockvenv/bin/pip install -q -r requirements/controller.in
	{ echo "# Pinned controller requirements (Python 3.11). Generated from controller.in by \`make lock\`."; \
	  build/lockvenv/bin/pip freeze; } > requirements/controller.txt

clean:
	-$(LAB) down --all
	rm -rf build tests/output reports
