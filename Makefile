# Loom — two commands on a fresh Debian 12 machine:
#   make run    sets everything up, then runs the main job on the embedded simulated fabric
#   make test   sets everything up, then runs the whole test suite (slow tests included)
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
FABRIC ?= fire-flyer-2
MODEL := topology/$(FABRIC).yaml
OUT ?= out/$(FABRIC)
APT_PACKAGES := opensm ibsim-utils infiniband-diags ibutils chromium frr frr-pythontools iputils-ping debootstrap openssh-server slurmctld slurm-client postgresql redis-server

.PHONY: setup apt-deps run test test-fast fuzz bench bench-expand bench-routing bench-roce bench-failures bench-netbox netbox-cache validate show check lock lock-check sim-up sim-down sim-status plan apply inventory clean

setup: $(VENV)/.installed apt-deps

# pyproject.toml says which versions loom works with; requirements.lock pins the exact set it is tested with
$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c requirements.lock -e '.[test,ansible]'
	touch $@

# Debian packages: the simulated InfiniBand fabric (ibsim + OpenSM + diags + ibdmchk) and
# headless Chromium (the cabling-sheet test renders the HTML in it), FRR for the live RoCE planes (and its
# frr-pythontools: frr-reload.py, which `loom plan`/`loom apply` use on Ethernet fabrics),
# debootstrap for molecule's chroot instances, openssh-server for the SSH target's tests (sshd on 127.0.0.1),
# slurmctld + slurm-client to load `loom slurm`'s topology.conf, PostgreSQL and Redis for the live NetBox tests.
apt-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The main job: validate every reference fabric, summarise and check $(FABRIC), bring its
# simulated fabric up (ibsim + OpenSM), plan, apply (verified by reading back), plan again.
# The simulated fabric stays up for `make plan` / `make apply`; `make sim-down` stops it.
run: setup
	@for m in topology/*.yaml; do $(BIN)/loom validate $$m || exit 1; done
	$(BIN)/loom show $(MODEL)
	$(BIN)/loom check $(MODEL)
	$(BIN)/loom route $(MODEL) --out $(OUT)
	$(BIN)/loom sim up $(MODEL)
	$(BIN)/loom plan $(MODEL) --out $(OUT)/plan.json; rc=$$?; [ $$rc -le 2 ] && [ $$rc -ne 1 ]
	$(BIN)/loom apply $(OUT)/plan.json
	$(BIN)/loom plan $(MODEL)
	@echo; echo "make run: done — $(MODEL) validated, checked, routed and applied (verified by reading back)."; \
	 echo "  outputs: $(OUT)/ (lfts.dump, guid2lid, topology.net, summary.json, plan.json)"; \
	 echo "  the simulated fabric is still up: make plan | make apply | make sim-status use it, make sim-down stops it"
	@$(BIN)/loom sim status $(MODEL)

inventory: setup
	$(BIN)/loom inventory $(MODEL)

# the lock file topology/$(FABRIC).lock.json: write/update it after a model change, or check it
lock: setup
	$(BIN)/loom lock $(MODEL)

lock-check: setup
	$(BIN)/loom lock $(MODEL) --check

sim-up sim-down sim-status: setup
	$(BIN)/loom sim $(subst sim-,,$@) $(MODEL)

# plan exits 2 when there are changes (Terraform's convention); make treats only 1 as failure
plan: setup
	$(BIN)/loom plan $(MODEL) --out $(OUT)/plan.json; rc=$$?; [ $$rc -ne 1 ]

apply: setup
	$(BIN)/loom apply $(OUT)/plan.json

test: setup netbox-cache
	$(BIN)/pytest -q

# NetBox for the live tests and bench-netbox (tests/netboxlab.py): a Python 3.12 venv with NetBox
# from PyPI and a migrated database dump, built once under ~/.cache/loom/netbox-<version>/
# (~10 min on a cold machine, nothing when warm).
netbox-cache: setup
	$(BIN)/python -m tests.netboxlab build

test-fast: setup
	$(BIN)/pytest -q -m "not slow"

bench: bench-expand bench-routing bench-roce bench-failures bench-netbox

bench-expand: setup
	$(BIN)/python bench/expand.py

bench-roce: setup
	$(BIN)/python bench/roce.py

# Loom's watcher vs OpenSM ftree/updn on a cable and a spine going down on the two-zone fabric
bench-failures: setup
	$(BIN)/python bench/failures.py

bench-routing: setup
	$(BIN)/python bench/routing.py

# first apply of $(FABRIC) to a fresh NetBox (target 3 min) and a no-change plan (target 20 s)
bench-netbox: netbox-cache
	$(BIN)/python bench/netbox.py $(MODEL)

validate show check: setup
	$(BIN)/loom $@ $(MODEL)

clean:
	rm -rf out .loom .pytest_cache .hypothesis fuzz-out

# The fuzz campaign (tests/fuzz): N structural mutants of the reference models through validate,
# expand, route, check and render, with a per-case time and memory cap; reproducers of any
# failure and report.json go to fuzz-out/.  Exit 1 on any traceback, hang or memory blow-up.
N ?= 10000
SEED ?= 1
fuzz: setup
	$(BIN)/python -m tests.fuzz --cases $(N) --seed $(SEED) --out fuzz-out
