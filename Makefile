# edgeguard: the verbs people expect. `make run` and `make test` work on a
# fresh Debian 12 machine as root: they install what is missing first.

SHELL := /bin/bash
CARGO ?= cargo
# Python: what pip installs goes into a venv under target/ (Debian 12's
# python3 has no pip and refuses system installs, PEP 668), made with
# --system-site-packages so Debian's python3-* packages and a developer's own
# installs count without a download. Recipes, and the scripts and tests they
# start as `python3`, find the venv's python first.
# A fresh Debian has no python3 until python3-venv brings it: then Debian's.
SYS_PYTHON := $(or $(shell command -v python3),/usr/bin/python3)
VENV := $(CURDIR)/target/venv
PYTHON ?= $(VENV)/bin/python
export PATH := $(VENV)/bin:$(PATH)
LUAJIT ?= luajit
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian's nginx + lua-nginx-module + lua-resty-core + OpenResty's LuaJIT
# (luajit2). Debian's plain `luajit` conflicts with the lua module: never it.
APT_RUNTIME := nginx libnginx-mod-http-lua lua-resty-core luajit2 lua-cjson curl
# gcc + libc6-dev: the linker rustc calls (`cc`); a fresh Debian has none.
APT_RUNTIME += gcc libc6-dev
# clang + compiler-rt: the C ABI test under ASan/UBSan; g++: libfuzzer-sys
# builds libFuzzer when `make lint` checks the fuzz crate.
APT_TEST := $(APT_RUNTIME) clang libclang-rt-14-dev g++
# wrk: tests/e2e/test_bench_harness.py runs the bench-e2e harness briefly.
APT_TEST += wrk
# luarocks: the rockspec test; lua-check: luacheck in make lint; prometheus:
# tests/e2e/test_prometheus.py scrapes the demo nginx with the real server.
APT_TEST += luarocks lua-check prometheus
# h2: tests/e2e/test_security_*.py frame h2c requests themselves.
# requests: tests/e2e/test_tls.py runs it as one of its real TLS clients
# (with curl, Python's ssl, and chromium, go and node when installed).
PIP_TEST := pytest prometheus_client h2 requests
# tests/e2e/test_challenge_browser.py: Debian's Chromium, headless and
# headful under Xvfb, solving the challenge page through nginx (Selenium).
APT_TEST += chromium chromium-driver xvfb xauth
# tests/e2e/test_challenge_people.py: Firefox over Marionette (Debian has no
# geckodriver) and lynx for the no-JavaScript fallback.
APT_TEST += firefox-esr lynx
# newsboat: tests/e2e/test_rules.py captures a real feed reader's request head.
APT_TEST += newsboat
PIP_TEST += selenium
# tests/e2e/test_deployment.py (scripts/deployment-measure.py): the front
# proxies it puts before edgeguard (HAProxy 2.6, Caddy 2.6, Squid with
# ssl-bump, which needs the OpenSSL build), and Go's net/http as one of the
# scripts sent through them (Node's fetch comes with npm's nodejs below).
APT_TEST += haproxy caddy squid-openssl golang-go
# tests/e2e/test_behaviour.py: curl_cffi (Chrome's TLS and HTTP/2, impersonated)
# is one of its crawlers; faketime runs nginx's clock faster for slow rates.
APT_TEST += faketime
PIP_TEST += curl_cffi
# tests/e2e/test_challenge_page.py: axe-core in headless Chromium on every
# challenge page and locale (npm, into target/npm: nothing global). Debian's
# npm only where there is no npm: NodeSource's nodejs carries its own and
# conflicts with it.
AXE_CORE := axe-core@4.14.1

RELEASE_LIB := target/release/libedgeguard.so
RUN_DIR := .run

.PHONY: all build deps deps-test header test test-rust test-lua test-c test-e2e lint shim-lines circles test-fresh \
        run stop bench bench-replay valgrind fuzz stress libcatboostmodel test-official clean

all: build

define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "==> apt-get install$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call apt_install,$(APT_RUNTIME))

# The venv (see PYTHON above). Debian's python3 needs python3-venv for it:
# installed when `python3 -m venv` fails, which is never on a python3 that
# carries its own (pyenv, python.org builds).
.PHONY: venv
venv: $(VENV)/bin/python

$(VENV)/bin/python:
	@$(SYS_PYTHON) -m venv --system-site-packages $(VENV) >/dev/null 2>&1 || { \
	  rm -rf $(VENV); echo "==> apt-get install python3-venv"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends python3-venv && \
	  $(SYS_PYTHON) -m venv --system-site-packages $(VENV); }

deps-test: venv
	$(call apt_install,$(APT_TEST))
	@for m in $(PIP_TEST); do \
	  $(PYTHON) -c "import $$m" 2>/dev/null || $(PYTHON) -m pip install -q $$m; \
	done
	@command -v npm >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends npm; }
	@[ -f target/npm/node_modules/axe-core/axe.min.js ] || \
	  (mkdir -p target/npm && npm install --no-save --no-audit --no-fund --prefix target/npm $(AXE_CORE))

build:
	$(CARGO) build --release --locked

# Regenerate include/edgeguard.h with the pinned cbindgen, and the Lua cdefs from it.
header:
	EDGEGUARD_UPDATE_HEADER=1 $(CARGO) test --locked --test c_header
	$(LUAJIT) scripts/gen-cdefs.lua

lint: venv
	$(CARGO) fmt --check
	$(CARGO) clippy --locked --all-targets -- -D warnings
	@# The fuzz targets are their own crate; a change in the API they call
	@# must not leave `make fuzz` broken until someone runs it.
	$(CARGO) check --locked --manifest-path fuzz/Cargo.toml --bins
	luacheck --no-color -q lua/
	@# README.md, BENCHMARKS.md, docs/: links, anchors, paths, make targets.
	$(PYTHON) scripts/check-docs.py
	@# Figures and names the docs copy from shipped files (thresholds, schema,
	@# install paths, options and defaults, actions, stages, metrics, the
	@# dashboard's cut, file:line references) against those files.
	$(PYTHON) scripts/check-doc-facts.py
	@# The shim applies what Rust decides: edgeguard.lua <= 250 code lines,
	@# every other module <= 600 (legacy/ and the generated cdefs.lua apart).
	sh scripts/shim-lines.sh
	@# No import circle between the files of src/ (issue 30).
	python3 scripts/import-circles.py src

# The Lua shim's code lines per module, against its limits (also in lint).
shim-lines:
	sh scripts/shim-lines.sh

# Import circles between the files of src/ (issue 30: none; also in lint).
circles:
	python3 scripts/import-circles.py src

test-rust:
	$(CARGO) test --locked

test-lua: build
	@set -e; for t in tests/lua/test_*.lua; do \
	  echo "==> $(LUAJIT) $$t"; \
	  EDGEGUARD_LIB=$(CURDIR)/$(RELEASE_LIB) $(LUAJIT) $$t; \
	done

# Rewrites tests/fixtures/legacy/: the frozen legacy engine's outputs, which
# tests/lua/test_legacy_fixtures.lua holds it to. Only on purpose (a change
# there is a change of the legacy engine); see tests/fixtures/legacy/README.md.
.PHONY: legacy-fixtures
legacy-fixtures: build
	EDGEGUARD_LIB=$(CURDIR)/$(RELEASE_LIB) $(LUAJIT) scripts/gen-legacy-fixtures.lua

# The hostile-input C program against include/edgeguard.h, under ASan + UBSan.
test-c:
	sh scripts/c-abi-test.sh

test-e2e: venv build
	$(PYTHON) -m pytest -q tests/e2e

test: deps-test lint test-rust test-lua test-c test-e2e

# `make run` then `make test` as root in a clean Debian 12 root built with
# debootstrap, on a clean clone of HEAD (scripts/test-fresh.sh says what the
# root gets first: make, and the host's Rust toolchain). Not part of `make
# test`: it downloads a Debian system and builds everything from nothing.
test-fresh:
	$(call apt_install,debootstrap git)
	scripts/test-fresh.sh

# edgeguard replay on >= 1M generated requests vs a serde_json::Value baseline.
bench-replay:
	scripts/bench-replay.sh

# The before/after table from real nginx under load (bench-results/e2e.md and
# e2e.png): bare proxy, Lua engine, Rust engine, shadow, interleaved. Flags go
# in BENCH_E2E_ARGS, e.g. BENCH_E2E_ARGS="--rounds 3 --duration 5".
APT_BENCH := $(APT_RUNTIME) wrk util-linux
PIP_BENCH := matplotlib
BENCH_E2E_ARGS ?=
.PHONY: bench-deps bench-e2e

bench-deps: venv
	$(call apt_install,$(APT_BENCH))
	@for m in $(PIP_BENCH); do \
	  $(PYTHON) -c "import $$m" 2>/dev/null || $(PYTHON) -m pip install -q $$m; \
	done

bench-e2e: bench-deps build
	$(PYTHON) scripts/bench-e2e.py $(BENCH_E2E_ARGS)

# bench-e2e over https: added worker CPU per request (keep-alive) and per
# handshake (a new connection per request) of JA4 + the TLS features.
.PHONY: bench-e2e-tls
bench-e2e-tls: bench-deps build
	$(PYTHON) scripts/bench-e2e-tls.py $(BENCH_E2E_ARGS)

# Worker CPU per TLS handshake with and without JA4 (scripts/bench-tls.py).
.PHONY: bench-tls
bench-tls: deps build
	$(PYTHON) scripts/bench-tls.py

# The shipped models (models/README.md): installs models/requirements.txt
# (pinned: the same bytes per seed) and runs models/train.py, which rewrites
# models/bot.json, models/spoof.json, models/metrics.json and the fixtures
# made from them (tests/fixtures/traffic/sample.jsonl, people.jsonl); then
# the scorer's small parity models on the new sample (tests/fixtures/scorer/).
# About 10 minutes on two busy cores. `make test` never trains.
.PHONY: train train-deps
train-deps: venv
	$(PYTHON) -m pip install -q -r models/requirements.txt

train: train-deps build
	$(PYTHON) models/train.py --edgeguard target/release/edgeguard
	$(PYTHON) tests/fixtures/scorer/train.py --expected-only target/release/edgeguard

# The captured real-client corpus scored by the shipped models (and by the
# legacy ones, for the before column): per client, per protocol x origin x
# flow, and the targets of models/README.md. Not part of `make test`, whose
# tests/e2e/test_real_clients.py sends the same corpus through nginx.
.PHONY: eval-real
eval-real: venv build
	$(PYTHON) models/eval_real.py --detail --through

# Instructions per single-document prediction of the native evaluator on the
# bench models (stable on a loaded machine, unlike time); CALLGRIND_MODE=official
# counts the official library instead (needs make libcatboostmodel).
CALLGRIND_MODE ?= native
.PHONY: callgrind
callgrind:
	$(call apt_install,valgrind bc)
	scripts/callgrind-model.sh $(CALLGRIND_MODE)

# The same C program against the release library under valgrind memcheck,
# then nginx end to end under memcheck (no definite leak from libedgeguard).
valgrind: build
	$(call apt_install,valgrind clang curl)
	sh scripts/valgrind.sh
	sh scripts/valgrind-nginx.sh

# Every cargo-fuzz target for FUZZ_SECONDS each (see scripts/fuzz.sh).
FUZZ_SECONDS ?= 60
fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install --locked cargo-fuzz
	sh scripts/fuzz.sh $(FUZZ_SECONDS)

# nginx under wrk: reloads under load, worker RSS over STRESS_REQUESTS requests,
# a worker killed mid-load, STRESS_CLIENTS clients never seen before through
# a 16m client memory (scripts/stress.py; ten minutes or so).
STRESS_RELOADS ?= 50
STRESS_REQUESTS ?= 1000000
STRESS_CLIENTS ?= 10000000
stress: deps-test build
	$(call apt_install,wrk)
	$(PYTHON) scripts/stress.py --reloads $(STRESS_RELOADS) --requests $(STRESS_REQUESTS) \
		--clients $(STRESS_CLIENTS)

# The official CatBoost model library, built from CatBoost's source
# distribution into ~/.cache/edgeguard (slow the first time).
libcatboostmodel:
	scripts/build-libcatboostmodel.sh

# Parity through the official library (catboost-sys), and native == official.
test-official: libcatboostmodel
	scripts/test-official.sh

# ---- Kafka: replay as a consumer group (docs/kafka.md) ----------------------
# The `kafka` cargo feature links librdkafka (vendored, static) into the
# edgeguard binary; the library nginx loads stays without it
# (tests/kafka/test_linkage.py). The tests run a real broker (tansu, built
# once from crates.io into ~/.cache/edgeguard: about 15 minutes on 2 cores)
# and Debian's rsyslog omkafka on librdkafka 2.12.1 (built once, about 4
# minutes). Not part of `make test`; .ci/run runs it after.
APT_KAFKA := rsyslog rsyslog-kafka
.PHONY: build-kafka tansu librdkafka deps-kafka test-kafka bench-kafka

build-kafka:
	$(CARGO) build --release --locked --features kafka

tansu:
	scripts/build-tansu.sh

librdkafka:
	scripts/build-librdkafka.sh

deps-kafka: deps-test
	$(call apt_install,$(APT_KAFKA))

test-kafka: deps-kafka tansu librdkafka build-kafka
	$(CARGO) clippy --locked --all-targets --features kafka -- -D warnings
	$(CARGO) test --locked --features kafka --lib -- kafka:: replay::input
	$(CARGO) test --locked --features kafka --bin edgeguard
	$(PYTHON) -m pytest -q tests/kafka

# Kafka against file replay on the same lines, one thread each; two group
# members against one; RSS over BENCH_KAFKA_MESSAGES messages under a slow
# writer (scripts/bench-kafka.py). BENCH_KAFKA_ARGS e.g. "--skip-rss".
BENCH_KAFKA_ARGS ?=
bench-kafka: deps-kafka tansu build-kafka
	$(PYTHON) scripts/bench-kafka.py $(BENCH_KAFKA_ARGS)

# The real-client corpus (tests/fixtures/real_clients/): Debian's Chromium
# (desktop and mobile-emulated), Firefox ESR (with and without
# resistFingerprinting), Epiphany (WebKitGTK), Falkon and qutebrowser
# (QtWebEngine), command-line tools, HTTP libraries and curl_cffi
# impersonations driven against nginx on loopback, every request recorded
# through resty.edgeguard.record (models/capture/). CAPTURE_ARGS e.g.
# "--only firefox". `make capture-report` replays the corpus through the
# shipped decision logic and prints how many requests of each client would be
# blocked.
APT_CAPTURE := $(APT_RUNTIME) openssl iproute2 mount chromium chromium-driver firefox-esr xvfb xauth \
               epiphany-browser webkit2gtk-driver falkon qutebrowser xdotool dbus-daemon \
               gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good \
               fonts-dejavu-core golang-go nodejs openjdk-17-jdk-headless wget
PIP_CAPTURE := selenium curl_cffi requests httpx aiohttp scrapy
CAPTURE_ARGS ?=
# tests/e2e/test_capture.py runs the harness with curl and urllib in make test:
# its TLS origins need openssl.
APT_TEST += openssl
CAPTURE_REPORT_ARGS ?= --by origin
.PHONY: capture capture-deps capture-report

capture-deps: venv
	$(call apt_install,$(APT_CAPTURE))
	@for m in $(PIP_CAPTURE); do \
	  $(PYTHON) -c "import $$m" 2>/dev/null || $(PYTHON) -m pip install -q $$m; \
	done

# build: the harness logs each TLS connection's JA4 with the library.
capture: capture-deps build
	$(PYTHON) models/capture/capture.py $(CAPTURE_ARGS)

capture-report: venv build
	$(PYTHON) models/capture/replay_report.py $(CAPTURE_REPORT_ARGS)

run: deps build
	@mkdir -p $(RUN_DIR)
	@if [ -f $(RUN_DIR)/nginx.pid ] && kill -0 $$(cat $(RUN_DIR)/nginx.pid) 2>/dev/null; then \
	  nginx -p $(CURDIR)/ -c nginx-conf/nginx.conf -s reload; echo "==> reloaded"; \
	else \
	  nginx -p $(CURDIR)/ -c nginx-conf/nginx.conf; echo "==> started"; \
	fi
	@echo "edgeguard is serving on http://127.0.0.1:8080 (demo origin on :8081); logs in $(RUN_DIR)/"
	@echo "a bot (403):    curl -si http://127.0.0.1:8080/hello | head -1"
	@echo "a browser-like request with internal headers: see README.md (Try it)"
	@echo "stop: make stop"

stop:
	@if [ -f $(RUN_DIR)/nginx.pid ]; then nginx -p $(CURDIR)/ -c nginx-conf/nginx.conf -s quit; fi

bench:
	$(CARGO) bench --locked --bench headers --bench model --bench features --bench scorer --bench clients

clean:
	$(CARGO) clean
	rm -rf $(RUN_DIR)

# ---- Install: make install / uninstall, make deb, the rockspec -------------
# Where LuaJIT's default package.path and package.cpath look (nginx's Lua
# module starts from them too): $(PREFIX)/share/lua/5.1/?.lua and
# $(PREFIX)/lib/lua/5.1/?.so; lib.lua finds the library as "libedgeguard" in
# every cpath template, so configure{} needs no lib_path. Debian's own Lua
# paths (make deb): PREFIX=/usr LUA_CMODULE_DIR=/usr/lib/<multiarch>/lua/5.1.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share/edgeguard
LUA_MODULE_DIR ?= $(PREFIX)/share/lua/5.1
LUA_CMODULE_DIR ?= $(PREFIX)/lib/lua/5.1
# What the example snippet's configure{ config = } names at run time.
EDGEGUARD_CONFIG ?= $(DATADIR)/edgeguard.json
# The models directory as edgeguard.json names it: relative to that file
# here, /usr/share/edgeguard/models in the package (its /etc copy).
EDGEGUARD_MODELS ?= models
# The verified bots file edgeguard.json names: the shipped example here (run
# edgeguard-update-verified-bots for the real lists, docs/install.md);
# /var/lib/edgeguard/verified-bots.json in the package, which its timer
# refreshes.
EDGEGUARD_VERIFIED_BOTS ?= verified-bots.example.json
# The challenge page's template and locales, as examples to copy and edit
# (challenge_template, challenge_locales; the library has them built in).
CHALLENGE_LOCALES := $(notdir $(wildcard src/challenge/page/locales/*.json))
LUA_MODULES := $(shell cd lua && find resty -name '*.lua' | LC_ALL=C sort)
# Rules presets (the library has them built in; installed to be read and
# copied) and the catalog of verified-bot sources for the updater.
RULE_PRESETS := $(notdir $(wildcard nginx-conf/rules/*.json))
DATA_FILES := edgeguard.json internal-headers.txt models/bot.json models/spoof.json \
              nginx/edgeguard.conf nginx/edgeguard-no-init.conf nginx/edgeguard-metrics.conf nginx/log-format.conf \
              nginx/log-format-challenge.conf nginx/log-format-decisions.conf nginx/decision-vars.conf \
              verified-bots.example.json \
              verified-bots-sources.json $(addprefix rules/,$(RULE_PRESETS)) \
              challenge/page.html $(addprefix challenge/locales/,$(CHALLENGE_LOCALES))
# The recording snippet for a server{} (docs/install.md, "The first week").
DATA_FILES += nginx/edgeguard-record.conf
INSTALL ?= install

.PHONY: install uninstall deb test-deb test-rockspec

install: build
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LUA_CMODULE_DIR) \
	  $(DESTDIR)$(DATADIR)/models $(DESTDIR)$(DATADIR)/nginx $(DESTDIR)$(DATADIR)/rules
	$(INSTALL) -m 755 target/release/edgeguard $(DESTDIR)$(BINDIR)/edgeguard
	$(INSTALL) -m 755 scripts/update-verified-bots $(DESTDIR)$(BINDIR)/edgeguard-update-verified-bots
	$(INSTALL) -m 755 $(RELEASE_LIB) $(DESTDIR)$(LUA_CMODULE_DIR)/libedgeguard.so
	$(INSTALL) -m 644 include/edgeguard.h $(DESTDIR)$(INCLUDEDIR)/edgeguard.h
	@set -e; for m in $(LUA_MODULES); do \
	  $(INSTALL) -D -m 644 lua/$$m $(DESTDIR)$(LUA_MODULE_DIR)/$$m; \
	done
	$(INSTALL) -m 644 models/bot.json models/spoof.json $(DESTDIR)$(DATADIR)/models/
	$(INSTALL) -m 644 nginx-conf/internal-headers.txt $(DESTDIR)$(DATADIR)/internal-headers.txt
	$(INSTALL) -m 644 nginx-conf/verified-bots.json $(DESTDIR)$(DATADIR)/verified-bots.example.json
	$(INSTALL) -m 644 nginx-conf/verified-bots-sources.json $(DESTDIR)$(DATADIR)/verified-bots-sources.json
	$(INSTALL) -m 644 $(addprefix nginx-conf/rules/,$(RULE_PRESETS)) $(DESTDIR)$(DATADIR)/rules/
	$(INSTALL) -m 644 nginx-conf/log-format.conf nginx-conf/log-format-challenge.conf \
	  nginx-conf/log-format-decisions.conf nginx-conf/decision-vars.conf \
	  packaging/nginx/edgeguard-metrics.conf $(DESTDIR)$(DATADIR)/nginx/
	$(INSTALL) -d $(DESTDIR)$(DATADIR)/challenge/locales
	$(INSTALL) -m 644 src/challenge/page/page.html $(DESTDIR)$(DATADIR)/challenge/page.html
	$(INSTALL) -m 644 $(addprefix src/challenge/page/locales/,$(CHALLENGE_LOCALES)) \
	  $(DESTDIR)$(DATADIR)/challenge/locales/
	sed -e 's|@MODELS@|$(EDGEGUARD_MODELS)|g' -e 's|@VERIFIED_BOTS@|$(EDGEGUARD_VERIFIED_BOTS)|g' \
	  packaging/edgeguard.json.in > $(DESTDIR)$(DATADIR)/edgeguard.json
	@set -e; for f in edgeguard edgeguard-record edgeguard-no-init; do \
	  sed -e 's|@CONFIG@|$(EDGEGUARD_CONFIG)|g' -e 's|@DATADIR@|$(DATADIR)|g' \
	    packaging/nginx/$$f.conf.in > $(DESTDIR)$(DATADIR)/nginx/$$f.conf; \
	done
	chmod 644 $(DESTDIR)$(DATADIR)/edgeguard.json $(DESTDIR)$(DATADIR)/nginx/edgeguard.conf \
	  $(DESTDIR)$(DATADIR)/nginx/edgeguard-record.conf $(DESTDIR)$(DATADIR)/nginx/edgeguard-no-init.conf

# Removes what install put there, and then its own directories if empty.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/edgeguard $(DESTDIR)$(BINDIR)/edgeguard-update-verified-bots \
	  $(DESTDIR)$(LUA_CMODULE_DIR)/libedgeguard.so \
	  $(DESTDIR)$(INCLUDEDIR)/edgeguard.h $(addprefix $(DESTDIR)$(LUA_MODULE_DIR)/,$(LUA_MODULES)) \
	  $(addprefix $(DESTDIR)$(DATADIR)/,$(DATA_FILES))
	-rmdir $(DESTDIR)$(DATADIR)/challenge/locales $(DESTDIR)$(DATADIR)/challenge 2>/dev/null
	-rmdir $(DESTDIR)$(LUA_MODULE_DIR)/resty/edgeguard/legacy $(DESTDIR)$(LUA_MODULE_DIR)/resty/edgeguard \
	  $(DESTDIR)$(DATADIR)/models $(DESTDIR)$(DATADIR)/nginx $(DESTDIR)$(DATADIR)/rules $(DESTDIR)$(DATADIR) 2>/dev/null

# The Debian package (scripts/build-deb.sh says what goes where).
deb: build
	$(call apt_install,dpkg-dev binutils)
	scripts/build-deb.sh

# Installs the .deb on this machine, serves through Debian's own nginx
# (/etc/nginx, not -p), purges it (tests/deb/test_deb.py). It starts and stops
# the system nginx, so it is not part of `make test`.
test-deb: deps-test deb
	$(PYTHON) -m pytest -q -s tests/deb

# luarocks make of the rockspec into a temporary tree, then require from it
# (seconds once the release build exists; also part of test-e2e).
test-rockspec: venv build
	$(PYTHON) -m pytest -q tests/e2e/test_rockspec.py
