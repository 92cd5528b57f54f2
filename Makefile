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
APT_PACKAGES := opensm ibsim-utils infiniband-diags ibutils chromium frr frr-pythontools iputils-ping debootstrap openssh-server gcc libc6-dev slurmctld slurm-client postgresql redis-server

.PHONY: setup apt-deps test-under-load tf-tools tf-state tf-state-down tf-init tf-plan tf-apply run test test-fast fuzz bench bench-commands bench-fresh bench-expand bench-routing bench-roce bench-configs bench-failures bench-push bench-netbox netbox-cache validate show check lock lock-check sim-up sim-down sim-status plan apply inventory clean docs docs-serve

# OpenTofu is not part of setup: only the tf-* targets and the Terraform tests use it (they build it)
setup: $(VENV)/.installed apt-deps
	@# loom's bytecode, as an installed package has it: with PYTHONDONTWRITEBYTECODE set (as on
	@# this machine) every command would compile loom's sources again (0.05-0.1 s of each start)
	@$(BIN)/python -m compileall -q loom
	@# the loops in C (loom/native.py): the MAD readers' and the checks' walk, built now rather than by first use
	@$(BIN)/python -c "from loom.fabrics.infiniband.compiled import exchange_library as b; \
	  print('[setup] the MAD reader loop in C:', b() or 'not built (no C compiler?): the readers loop in Python')"
	@$(BIN)/python -c "from loom.routing.kernels import kernels as k; \
	  print('[setup] the walks over every table cell in C:', 'built' if k() else 'not built (no C compiler?): numpy walks them')"

# pyproject.toml says which versions loom works with; requirements.lock pins the exact set it is tested with
$(VENV)/.installed: pyproject.toml requirements.lock
	@echo "[setup] Loom's Python packages into $(VENV)/ (~1 min on a fresh 2-core machine; pip shows each one)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	set -o pipefail; $(BIN)/pip install --progress-bar on -c requirements.lock -e '.[test,ansible,docs]' | { grep -v '^Requirement already satisfied' || true; }
	touch $@

# Debian packages: the simulated InfiniBand fabric (ibsim + OpenSM + diags + ibdmchk) and
# headless Chromium (the cabling-sheet test renders the HTML in it), FRR for the live RoCE planes (and its
# frr-pythontools: frr-reload.py, which `loom plan`/`loom apply` use on Ethernet fabrics),
# debootstrap for molecule's chroot instances, openssh-server for the SSH target's tests (sshd on 127.0.0.1;
# gcc builds their OpenSMs' MAD timeouts, tests/umad_timeouts.c),
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

# tests/suite.py says up front what the run does and how long it takes, builds the NetBox cache
# and OpenTofu beside the first tests on a cold machine, and prints each phase's time as it ends;
# tests/live_report.py names each failure as it happens and each test file's outcome and time
test: setup
	$(BIN)/python -m tests.suite --prebuild

# NetBox for the live tests and bench-netbox (tests/netboxlab.py): a Python 3.12 venv with NetBox
# from PyPI and a migrated database dump, built once under ~/.cache/loom/netbox-<version>/
# (~10 min on a cold machine, nothing when warm).
netbox-cache: setup
	$(BIN)/python -m tests.netboxlab build

test-fast: setup
	$(BIN)/python -m tests.suite -m "not slow"

# the slow tests with two CPU hogs and a disk hog beside them (tests/load.py): what a busy CI sees
test-under-load: setup netbox-cache tf-tools
	$(BIN)/python -m tests.suite --under-load -m slow

# every bench; each prints its figures beside their targets (MISS marks a miss) and all of them
# land in bench/results/<time>.json (`python bench/compare.py OLD NEW` compares two runs)
bench: setup netbox-cache
	@out=bench/results/$$(date +%Y%m%d-%H%M%S); status=0; \
	for b in commands expand routing roce configs failures push netbox fresh; do \
		LOOM_BENCH_OUT=$$out $(MAKE) --no-print-directory bench-$$b || status=1; done; \
	$(BIN)/python bench/figures.py join $$out; exit $$status

# issue 36's commands as typed: loom --help, validate tiny, check at the LID limit (~1 min;
# LOOM_BENCH_LID_LIMIT=0 leaves it out)
bench-commands: setup
	$(BIN)/python bench/commands.py

# make run and make test on a fresh clone of this repository (~35 min; LOOM_BENCH_MAKE_TEST=0
# leaves make test out)
bench-fresh: setup
	$(BIN)/python bench/fresh.py

bench-expand: setup
	$(BIN)/python bench/expand.py

bench-roce: setup
	$(BIN)/python bench/roce.py

# every config file of the 32,768-GPU RoCE fabric (target 60 s) and one device with --only (target 1 s)
bench-configs: setup
	$(BIN)/python bench/configs.py

# Loom's watcher vs OpenSM ftree/updn on a cable and a spine going down on the two-zone fabric
bench-failures: setup
	$(BIN)/python bench/failures.py

bench-routing: setup
	$(BIN)/python bench/routing.py

# no-change plan (target 5 s), full apply with QoS (target 10 s), the read-back ceiling and a bare C
# reader of the same SMPs beside it (the simulator's floor), two zones
bench-push: setup
	$(BIN)/python bench/push.py

# first apply of $(FABRIC) to a fresh NetBox (target 3 min) and a no-change plan (target 20 s)
bench-netbox: netbox-cache
	$(BIN)/python bench/netbox.py $(MODEL)

validate show check: setup
	$(BIN)/loom $@ $(MODEL)

clean:
	rm -rf out .loom .pytest_cache .hypothesis fuzz-out site

# The documentation site (mkdocs.yml): built strictly — a broken link or anchor, or a page left
# out of the nav, fails the build; served on 127.0.0.1 only (the tutorial's own machine)
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

# The fuzz campaign (tests/fuzz): N structural mutants of the reference models through validate,
# expand, route, check and render, with a per-case time and memory cap; reproducers of any
# failure and report.json go to fuzz-out/.  Exit 1 on any traceback, hang or memory blow-up.
N ?= 10000
SEED ?= 1
fuzz: setup
	$(BIN)/python -m tests.fuzz --cases $(N) --seed $(SEED) --out fuzz-out

# ---------------------------------------------------------------------------------- Terraform
# OpenTofu built from the Go module proxy once (~6 min on 2 cores) into ~/.cache/loom/tofu-<v>/;
# the loom provider (terraform/provider) built into a filesystem mirror under .loom/tf/ with the
# CLI config file that points at it; the `pg` state backend's PostgreSQL kept in .loom/tf/pg.
# Nothing of this is in git.  docs/terraform.md says how the pieces fit.
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)
LOOM_CACHE ?= $(HOME)/.cache/loom
TOFU_VERSION := 1.12.6
TOFU := $(LOOM_CACHE)/tofu-$(TOFU_VERSION)/tofu
PROVIDER_VERSION := 0.1.0
TF_STATE := .loom/tf
TF_MIRROR := $(CURDIR)/$(TF_STATE)/mirror
TF_PLATFORM = $(shell $(GO) env GOOS)_$(shell $(GO) env GOARCH)
PROVIDER_BIN = $(TF_MIRROR)/loom.local/loom/loom/$(PROVIDER_VERSION)/$(TF_PLATFORM)/terraform-provider-loom_v$(PROVIDER_VERSION)
TF_CLI_CONFIG := $(CURDIR)/$(TF_STATE)/tofurc
TF_TARGET ?= sim
TF_VARS = -var target=$(TF_TARGET) $(if $(NETBOX_URL),-var netbox_url=$(NETBOX_URL))
# what every tofu run gets: the CLI config, its data dir outside terraform/, the loom it calls,
# the simulated fabric's state where `make sim-up` keeps it, the pg backend's connection string
TF_ENV = TF_CLI_CONFIG_FILE=$(TF_CLI_CONFIG) TF_DATA_DIR=$(CURDIR)/$(TF_STATE)/$(FABRIC) TF_IN_AUTOMATION=1 \
	LOOM_BIN=$(CURDIR)/$(BIN)/loom LOOM_STATE_DIR=$(CURDIR)/.loom/sim \
	PG_CONN_STR=$$($(BIN)/python -m tests.pglab up $(TF_STATE)/pg)

tf-tools: $(TOFU) $(PROVIDER_BIN) $(TF_CLI_CONFIG)

$(TOFU):
	GO=$(GO) terraform/scripts/build-tofu.sh $(TOFU_VERSION) $(dir $(TOFU))

$(PROVIDER_BIN): $(wildcard terraform/provider/*.go terraform/provider/*/*/*.go) terraform/provider/go.mod terraform/provider/go.sum
	mkdir -p $(dir $@)
	exec 9>$(dir $@).build-lock && flock 9 && cd terraform/provider && nice -n 10 $(GO) build -trimpath -ldflags "-X main.version=$(PROVIDER_VERSION)" -o $@.tmp . \
	  && mv $@.tmp $@

$(TF_CLI_CONFIG): Makefile
	mkdir -p $(dir $@)
	printf 'provider_installation {\n  filesystem_mirror {\n    path    = "%s"\n    include = ["loom.local/*/*"]\n  }\n  direct {\n    exclude = ["loom.local/*/*"]\n  }\n}\n' "$(TF_MIRROR)" > $@.$$$$.tmp \
	  && mv $@.$$$$.tmp $@

# the pg backend's PostgreSQL (127.0.0.1, a free port, data in .loom/tf/pg): started if stopped
tf-state: setup
	@$(BIN)/python -m tests.pglab up $(TF_STATE)/pg >/dev/null && echo "pg state backend: up (port $$(cat $(TF_STATE)/pg/port))"

tf-state-down:
	$(BIN)/python -m tests.pglab down $(TF_STATE)/pg

# -upgrade: a rebuilt provider has a new checksum; the lock file is not kept in git
tf-init: setup tf-tools tf-state
	$(TF_ENV) $(TOFU) -chdir=terraform/$(FABRIC) init -input=false -upgrade >/dev/null

# tofu's -detailed-exitcode passed through: 0 no changes, 2 changes, 1 error — so a pipeline
# stops on a plan with changes until it is reviewed.  make itself exits 2 for any failing
# recipe, so the last line says which it was; a script that must tell 1 from 2 by the code
# runs the tofu line itself (docs/terraform.md).
tf-plan: tf-init
	@rc=0; $(TF_ENV) $(TOFU) -chdir=terraform/$(FABRIC) plan -input=false -detailed-exitcode $(TF_VARS) || rc=$$?; \
	case $$rc in 0) echo "make tf-plan: no changes";; 2) echo "make tf-plan: changes (tofu plan exit 2)" >&2;; \
	  *) echo "make tf-plan: tofu plan failed (exit $$rc)" >&2;; esac; exit $$rc

tf-apply: tf-init $(if $(filter sim,$(TF_TARGET)),sim-up)
	$(TF_ENV) $(TOFU) -chdir=terraform/$(FABRIC) apply -input=false -auto-approve $(TF_VARS)
