# Tandem — set-up, build, test and demo. `make demo` and `make test` work on a fresh Debian machine.
SHELL := /bin/bash
DEB_PACKAGES := libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-plugins-base \
                gstreamer1.0-plugins-good gstreamer1.0-tools pkg-config
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT_BUILD_FLAGS ?=
TANDEM := .build/debug/tandem

.PHONY: deps build release test demo samples fuzz fuzz-corpus soak clean

## Installs the Debian packages Tandem needs, only those that are missing.
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	swift build $(SWIFT_BUILD_FLAGS)

## The whole test suite. One test at a time: on two cores, CPU-bound simulations running beside the tests that
## time real sockets and players would starve them (Swift's cooperative pool has one thread per core).
test: deps
	swift build --build-tests $(SWIFT_BUILD_FLAGS)
	swift test --skip-build --no-parallel $(SWIFT_BUILD_FLAGS)

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

## Regenerates media-samples/ deterministically from GStreamer test sources.
samples: deps
	bash scripts/make-samples.sh media-samples

clean:
	rm -rf .build .build-fuzz
