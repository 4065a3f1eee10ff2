# Tandem — set-up, build, test and demo. `make demo` and `make test` work on a fresh Debian machine.
SHELL := /bin/bash
DEB_PACKAGES := libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-plugins-base \
                gstreamer1.0-plugins-good gstreamer1.0-tools gstreamer1.0-x pkg-config syncplay-server syncplay mpv libx11-dev \
                xvfb chromium python3-venv python3-openssl openssl valgrind \
                nftables miniupnpd-nftables libminiupnpc-dev libnatpmp-dev iproute2 libsqlite3-dev libssl-dev \
                gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Debug builds without debug info: on two cores a clean build is about a fifth shorter (the whole of `make test`
# must fit in 15 minutes). For a debugger: `make build SWIFT_BUILD_FLAGS=` (a full rebuild; keep one setting).
SWIFT_BUILD_FLAGS ?= -Xswiftc -gnone -Xcc -g0
TANDEM := .build/debug/tandem
# Where `make install` puts things: $(DESTDIR)$(PREFIX)/bin/tandem, completions and the man page under share/, the
# relay's systemd unit under lib/systemd/system (its ExecStart names $(UNIT_BINDIR)/tandem).
PREFIX ?= /usr/local
DESTDIR ?=
UNIT_BINDIR ?= $(PREFIX)/bin
VERSION := $(shell sed -n 's/.*static let string = "\(.*\)"/\1/p' Sources/Tandem/Version.swift)
ARCH := $(shell uname -m)
MAN_DATE := $(shell git log -1 --format=%cs 2>/dev/null || date +%F)
# The installed binary carries the Swift runtime (Debian's libraries stay shared: GStreamer, OpenSSL's libssl and
# libcrypto, SQLite, libnatpmp, libminiupnpc and glibc), so it runs without a toolchain.
# Run-time exclusivity checks are left out of it (debug builds, and so every test, keep them): they were 13 % of the
# relay's instructions per delivered message (`tandem bench relay --instructions`, docs/BENCHMARKS.md "The relay").
RELEASE_FLAGS := -c release --static-swift-stdlib -Xswiftc -enforce-exclusivity=unchecked
DEPS_LOG := $(or $(TMPDIR),/tmp)/tandem-deps.log
# H.264/AAC in MP4 for the tests that need it: made by `make samples` (or `make test`) when missing, not committed.
MP4_SAMPLE := media-samples/h264-1080p.mp4
# Playwright (from PyPI) drives Debian's chromium in the browser-peer test; its own browser downloads are never used.
WEB_VENV := .build/web-venv

.PHONY: deps build release install uninstall install-smoke test api-check api-baseline docs demo samples fuzz fuzz-corpus soak clean

## Installs the Debian packages Tandem needs, only those that are missing. Quiet: one line, and apt's output
## only when it fails.
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing (log: $(DEPS_LOG))"; \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	      -o Dpkg::Use-Pty=0 $$missing; } > $(DEPS_LOG) 2>&1 \
	    || { tail -n 30 $(DEPS_LOG); echo "make deps: apt-get failed (full log: $(DEPS_LOG))"; exit 1; }; \
	fi
	@$(WEB_VENV)/bin/python -c 'import playwright' 2>/dev/null || { \
	  echo "installing Playwright in $(WEB_VENV) (log: $(DEPS_LOG))"; \
	  { python3 -m venv $(WEB_VENV) && $(WEB_VENV)/bin/pip install -q playwright; } >> $(DEPS_LOG) 2>&1 \
	    || { tail -n 30 $(DEPS_LOG); echo "make deps: installing Playwright failed (full log: $(DEPS_LOG))"; exit 1; }; }

build: deps
	swift build $(SWIFT_BUILD_FLAGS)

## An optimised, self-contained binary, installed with bash/zsh/fish completions and a man page generated from
## the command-line definitions: `make install PREFIX=/usr/local` (or `PREFIX=$$HOME/.local`; DESTDIR for staging).
install: deps
	swift build $(RELEASE_FLAGS) --product tandem
	swift build $(RELEASE_FLAGS) --product generate-manual
	@$(MAKE) --no-print-directory install-files BIN="$$(swift build $(RELEASE_FLAGS) --show-bin-path)"

# Copies a built `tandem` from $(BIN) (with generate-manual beside it) under $(DESTDIR)$(PREFIX).
install-files:
	@test -x "$(BIN)/tandem" || { echo "no tandem binary in '$(BIN)'"; exit 1; }
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d $(DESTDIR)$(PREFIX)/share/tandem/media-samples \
	  $(DESTDIR)$(PREFIX)/lib/systemd/system
	install -s -m 755 $(BIN)/tandem $(DESTDIR)$(PREFIX)/bin/tandem
	sed 's|^ExecStart=/usr/local/bin/tandem |ExecStart=$(UNIT_BINDIR)/tandem |' contrib/systemd/tandem-serve.service \
	  > $(DESTDIR)$(PREFIX)/lib/systemd/system/tandem-serve.service
	chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/system/tandem-serve.service
	install -m 644 contrib/systemd/tandem-serve.env $(DESTDIR)$(PREFIX)/share/tandem/tandem-serve.env
	install -m 644 media-samples/countdown.webm media-samples/countdown.opus $(DESTDIR)$(PREFIX)/share/tandem/media-samples/
	$(BIN)/tandem --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tandem
	$(BIN)/tandem --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_tandem
	$(BIN)/tandem --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/tandem.fish
	$(BIN)/generate-manual $(BIN)/tandem --date $(MAN_DATE) --output-directory $(DESTDIR)$(PREFIX)/share/man/man1
	@echo "installed tandem $(VERSION) in $(DESTDIR)$(PREFIX)/bin (man tandem; completions for bash, zsh, fish; the relay's unit tandem-serve.service)"

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/tandem $(DESTDIR)$(PREFIX)/share/man/man1/tandem.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tandem $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_tandem \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/tandem.fish \
	  $(DESTDIR)$(PREFIX)/lib/systemd/system/tandem-serve.service
	rm -rf $(DESTDIR)$(PREFIX)/share/tandem

## A release archive: dist/tandem-VERSION-linux-ARCH.tar.gz (bin/, share/, README, CHANGELOG, docs) and its SHA-256.
release: deps
	swift build $(RELEASE_FLAGS) --product tandem
	swift build $(RELEASE_FLAGS) --product generate-manual
	rm -rf dist/tandem-$(VERSION)-linux-$(ARCH)
	@$(MAKE) --no-print-directory install-files BIN="$$(swift build $(RELEASE_FLAGS) --show-bin-path)" \
	  DESTDIR= PREFIX=$(CURDIR)/dist/tandem-$(VERSION)-linux-$(ARCH) UNIT_BINDIR=/usr/local/bin
	cp -r README.md CHANGELOG.md docs dist/tandem-$(VERSION)-linux-$(ARCH)/
	tar -C dist -czf dist/tandem-$(VERSION)-linux-$(ARCH).tar.gz tandem-$(VERSION)-linux-$(ARCH)
	cd dist && sha256sum tandem-$(VERSION)-linux-$(ARCH).tar.gz | tee tandem-$(VERSION)-linux-$(ARCH).tar.gz.sha256

## Installs the debug build into a scratch prefix outside the source tree and checks what landed (part of
## `make test`).
SMOKE_PREFIX := $(or $(TMPDIR),/tmp)/tandem-install-smoke
install-smoke:
	swift build --product generate-manual $(SWIFT_BUILD_FLAGS)
	rm -rf $(SMOKE_PREFIX)
	@$(MAKE) --no-print-directory install-files BIN=.build/debug PREFIX=$(SMOKE_PREFIX)
	bash scripts/check-install.sh $(SMOKE_PREFIX) $(VERSION)
	rm -rf $(SMOKE_PREFIX)

## The whole test suite: after the build, the API check, the reference documentation and the install smoke side by
## side (none of them builds the tests again), then the suites in three lanes side by side, each one test at a time,
## the suites that keep a core busy all in one lane (scripts/run-tests.sh says why). The files tests and the programs
## they start make (media, certificates, browser profiles, players' sockets) go to a directory of this run's own,
## removed when it ends, pass or fail.
test: deps $(MP4_SAMPLE)
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	@logs=$$(mktemp -d); \
	bash scripts/api-check.sh > $$logs/api 2>&1 & api=$$!; \
	bash scripts/docs.sh > $$logs/docs 2>&1 & docs=$$!; \
	$(MAKE) --no-print-directory install-smoke > $$logs/install 2>&1; install=$$?; \
	wait $$api; api=$$?; wait $$docs; docs=$$?; \
	cat $$logs/api $$logs/docs $$logs/install; rm -rf $$logs; \
	[ $$api = 0 ] || echo "make test: the API check failed (above)"; \
	[ $$docs = 0 ] || echo "make test: the reference documentation failed (above)"; \
	[ $$install = 0 ] || echo "make test: the install smoke failed (above)"; \
	[ $$api = 0 ] && [ $$docs = 0 ] && [ $$install = 0 ]
	bash scripts/run-tests.sh $(SWIFT_BUILD_FLAGS)

## The library's public API (Tandem and the modules it re-exports) against the baseline in api/: a breaking
## change fails, naming it (a few seconds after a build; part of `make test`). docs/DEVELOPMENT.md says more.
api-check: deps
	swift build $(SWIFT_BUILD_FLAGS)
	bash scripts/api-check.sh

## Takes the current public API as the baseline in api/: for a breaking change made on purpose (commit api/ with
## it, and name the change in CHANGELOG.md).
api-baseline: deps
	swift build $(SWIFT_BUILD_FLAGS)
	bash scripts/api-check.sh --update

## The reference documentation: the DocC catalog Sources/Tandem/Tandem.docc over the public API of Tandem and the
## modules it re-exports, as a static site in .build/docs/Tandem.doccarchive. Any warning fails it. From the debug
## build, rebuilding nothing: under 20 s (part of `make test`; docs/DEVELOPMENT.md, "The reference documentation").
docs: deps
	swift build $(SWIFT_BUILD_FLAGS)
	bash scripts/docs.sh

## A real watch-together session on the bundled samples.
demo: build
	$(TANDEM) demo

## libFuzzer over everything decoded from the network (frames, session messages, the authority, invites), in a
## optimised build of its own with AddressSanitizer. FUZZ_RUNS inputs (10⁷ for the published figure); new corpus entries go to
## .build-fuzz/corpus, a crash to .build-fuzz/crash-* (replay it with .build/debug/tandem-fuzz FILE).
FUZZ_RUNS ?= 1000000
FUZZ_FLAGS := -Xswiftc -sanitize=fuzzer,address -Xswiftc -DTANDEM_LIBFUZZER
fuzz: deps
	swift build -c release --scratch-path .build-fuzz --product tandem-fuzz $(FUZZ_FLAGS)
	mkdir -p .build-fuzz/corpus
	.build-fuzz/release/tandem-fuzz -runs=$(FUZZ_RUNS) -max_len=4096 -print_final_stats=1 \
	  -artifact_prefix=.build-fuzz/ .build-fuzz/corpus Fuzz/corpus

## Rewrites the fuzzer's seed corpus (deterministic).
fuzz-corpus:
	python3 scripts/make-fuzz-corpus.py Fuzz/corpus

## The server under churn for SOAK_SECONDS (600 for the published figure).
SOAK_SECONDS ?= 600
soak: build
	$(TANDEM) bench soak --duration $(SOAK_SECONDS)

## Regenerates media-samples/ deterministically from GStreamer test sources, and makes the H.264/AAC MP4 the
## tests that need it use (not committed: about 5 MB).
samples: deps
	bash scripts/make-samples.sh media-samples
	bash scripts/make-mp4-sample.sh $(MP4_SAMPLE)

## The MP4 sample, made once when missing.
$(MP4_SAMPLE): | deps
	bash scripts/make-mp4-sample.sh $(MP4_SAMPLE)

clean:
	rm -rf .build .build-fuzz dist
