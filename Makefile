# Tandem — set-up, build, test and demo. `make demo` and `make test` work on a fresh Debian machine.
SHELL := /bin/bash
DEB_PACKAGES := libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-plugins-base \
                gstreamer1.0-plugins-good gstreamer1.0-tools pkg-config
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT_BUILD_FLAGS ?=
TANDEM := .build/debug/tandem

.PHONY: deps build release test demo samples clean

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

## Regenerates media-samples/ deterministically from GStreamer test sources.
samples: deps
	bash scripts/make-samples.sh media-samples

clean:
	rm -rf .build
