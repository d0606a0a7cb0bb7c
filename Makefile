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

.PHONY: help venv deps aptrepo collection-link lab-up lab-down lab-status lab-inventory demo test test-unit test-security \
        test-sanity test-lint test-k8s test-system bench bench-k8s build lock ansible-test-offline clean demo-k8s

help:
	@echo "make demo        venv + lab (N=$(N)) + playbooks/site.yml + verify.yml, prints the result"
	@echo "make demo-k8s    playbooks/k8s.yml against the API emulator with N simulated GPU nodes, prints the report"
	@echo "make test        every test: unit, sanity, lint, lab, molecule, integration (pytest summary last)"
	@echo "make venv        controller virtualenv from requirements/controller.txt"
	@echo "make lab-up N=3  bring up N Debian 12 lab hosts ($(LAB_NAME)-01 ...); make lab-down tears them down"
	@echo "make lab-inventory DEST=dir  the running lab as an inventory of your own (see README: your own fleet)"
	@echo "make bench       benchmarks on the lab (BENCH_SIZES=$(BENCH_SIZES); the full run: BENCH_SIZES=3,20,50,100), results in bench/RESULTS.md"

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

# The running lab as an inventory of your own (hosts, SSH key and known_hosts, the re-rooted /proc,
# the lab repository's URL, cufile_version, ...), for the collection installed from its tarball
lab-inventory:
	@test -n "$(DEST)" || { echo "make lab-inventory DEST=<directory>, e.g. DEST=~/gds-fleet/inventory"; exit 2; }
	$(BIN)/python lab/lab_inventory.py --lab "lab $(LAB_NAME)" --lab-inventory $(LAB_INVENTORY) $(DEST)

demo: venv lab-up
	$(BIN)/ansible-playbook lab/prepare.yml
	$(BIN)/ansible-playbook playbooks/site.yml
	$(BIN)/ansible-playbook playbooks/verify.yml
	@echo
	@echo "demo: lab/prepare.yml, playbooks/site.yml and playbooks/verify.yml ran against $(N) lab hosts ($(LAB_INVENTORY))."
	@cat inventories/reports/lab/gds-fleet.md
	@echo
	@echo "demo: fleet report: $(CURDIR)/inventories/reports/lab/gds-fleet.html (also gds-fleet.json, gds-fleet.md; each inventory's report is in reports/<inventory name> beside it)"
	@echo "demo: the lab stays up for inspection; 'make lab-down' removes it."
	@echo "demo: to run the README's commands yourself: source .venv/bin/activate (the tools are in .venv/bin)"

# The Kubernetes path without a cluster: the API emulator, its simulated kubelet REALLY running
# each probe pod (C stand-ins of libcuda/libcufile), real helm, then the fleet report.
demo-k8s: venv
	$(BIN)/python tests/fixtures/k8s_emulator/demo_k8s.py --nodes $(N)

# Everything. pytest orchestrates the slow suites too (tests/system), so its summary line is
# the last thing printed.
test: venv deps ansible-test-offline
	$(BIN)/pytest -p no:cacheprovider -p no:pytest-ansible -ra tests/unit tests/security tests/system tests/integration/gpu_operator tests/integration/gds_node_probe

test-unit: venv
	$(BIN)/pytest -p no:cacheprovider -p no:pytest-ansible -q tests/unit

# The security suite: attacks, bad inputs and probe interruptions, with their figures last.
test-security: venv
	$(BIN)/pytest -p no:cacheprovider -p no:pytest-ansible -q tests/security

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

# The full run is BENCH_SIZES=3,20,50,100 (about 40 minutes on 2 cores); bench/run --help.
BENCH_SIZES ?= 3,20
bench: venv deps
	$(BIN)/python bench/run --sizes $(BENCH_SIZES)

# gds_node_probe wall time on 1, 10 and 50 simulated GPU nodes (emulator), ratio 50/1 printed.
bench-k8s: venv
	$(BIN)/python bench/k8s-node-probe

# The tarball's README.md is README-collection.md, the README for users of the installed collection.
build: venv
	ANSIBLE_GALAXY=$(BIN)/ansible-galaxy tests/utils/build-collection.sh . build/

lock:
	$(PYTHON) -m venv build/lockvenv
	build/lockvenv/bin/pip install -q -r requirements/controller.in
	{ echo "# Pinned controller requirements (Python 3.11). Generated from controller.in by \`make lock\`."; \
	  build/lockvenv/bin/pip freeze; } > requirements/controller.txt

clean:
	-$(LAB) down --all
	rm -rf build tests/output reports inventories/reports

# --- Ecosystem checks (issue 22): Execution Environment, Galaxy import, docs site -------------
# Their tools live in their own virtualenv: galaxy-importer pins its own ansible-core and
# ansible-lint, which must not replace .venv's. CI runs `make eco` after `make test`.
ECO_VENV ?= .venv-eco
ECO := $(CURDIR)/$(ECO_VENV)/bin
VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
TARBALL := build/gpudirect-storage-$(VERSION).tar.gz
ECO_COLLECTIONS := $(CURDIR)/build/collections

.PHONY: eco eco-venv eco-lock ee galaxy-import docs docs-lint

$(ECO)/.stamp: requirements/eco.txt
	$(PYTHON) -m venv $(ECO_VENV)
	$(ECO)/pip install -q --upgrade pip
	$(ECO)/pip install -q -r requirements/eco.txt
	touch $@

eco-venv: $(ECO)/.stamp

eco-lock:
	$(PYTHON) -m venv build/ecolockvenv
	build/ecolockvenv/bin/pip install -q -r requirements/eco.in
	{ echo "# Pinned ecosystem tools (Python 3.11). Generated from eco.in by \`make eco-lock\`."; \
	  build/ecolockvenv/bin/pip freeze; } > requirements/eco.txt

eco: ee galaxy-import docs

# The EE's build context in build/ee (no image: `podman build build/ee` does that), after
# checking what ansible-builder reads from the installed collection (meta/execution-environment.yml).
ee: eco-venv build
	rm -rf build/ee build/ee-introspect
	$(BIN)/ansible-galaxy collection install --force -p build/ee-introspect $(TARBALL) >/dev/null
	$(ECO)/ansible-builder introspect build/ee-introspect | tee build/ee-introspect.txt
	for req in jsonschema kubernetes openssh-client; do grep -q "$$req.*from collection gpudirect.storage" build/ee-introspect.txt \
	  || { echo "ee: ansible-builder does not see $$req in the collection's EE metadata"; exit 1; }; done
	$(ECO)/ansible-builder create -f ee/execution-environment.yml -c build/ee
	grep -q 'install -m 0755 /tmp/linux-amd64/helm' build/ee/Dockerfile
	@echo "ee: build context in build/ee (ansible-builder create), helm from its release tarball"

# The checks Galaxy runs at upload (galaxy-importer: ansible-doc of every plugin, ansible-lint,
# role READMEs, changelog, ...) on the tarball of `make build`; a failed check exits non-zero.
galaxy-import: eco-venv build
	rm -rf build/galaxy-importer && mkdir -p build/galaxy-importer
	cd build/galaxy-importer && PATH=$(ECO):$$PATH GALAXY_IMPORTER_TMP_ROOT_DIR=$(CURDIR)/build/galaxy-importer \
	  $(ECO)/python -m galaxy_importer.main $(CURDIR)/$(TARBALL) 2>&1 | tee $(CURDIR)/build/galaxy-importer.log
	grep -q '^Importer processing completed successfully' build/galaxy-importer.log
	@# the bar is an import without a warning or an error line, not only a successful one
	! grep -E '^(WARNING|ERROR)' build/galaxy-importer.log

docs-lint: eco-venv collection-link
	cd $(COLLECTION_LINK) && ANSIBLE_COLLECTIONS_PATH=$(ECO_COLLECTIONS) \
	  $(ECO)/antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs=all .

# The docs site (build/docs/build/html/index.html) from the modules', plugins' and roles' own
# docs: antsibull-docs writes the rST, sphinx (-W) the HTML, offline (docs/site/conf-offline.py).
docs: docs-lint
	rm -rf build/docs && mkdir -p build/docs && chmod 0755 build/docs
	ANSIBLE_COLLECTIONS_PATH=$(ECO_COLLECTIONS) $(ECO)/antsibull-docs sphinx-init --use-current \
	  --dest-dir build/docs --project gpudirect.storage --copyright "gpudirect.storage contributors" \
	  gpudirect.storage >/dev/null
	cat docs/site/conf-offline.py >> build/docs/conf.py
	PATH=$(ECO):$$PATH ANSIBLE_COLLECTIONS_PATH=$(ECO_COLLECTIONS) bash build/docs/build.sh
	@echo "docs: $(CURDIR)/build/docs/build/html/index.html"
