# Kiln: top-level entry points. `make run` and `make test` install what is
# missing (Debian packages only), build, and run.
BUILD ?= build
JOBS ?= $(shell nproc)
MODELS ?= $(BUILD)/models

.PHONY: setup configure build run test clean

setup:
	scripts/setup.sh

$(BUILD)/build.ninja:
	cmake -G Ninja -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit

configure: setup $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j $(JOBS)

# The main job: compile the bundled example model and print its kiln IR.
run: build
	$(BUILD)/bin/kiln-compile examples/tiny_cnn.onnxtxt --emit=kiln

# The whole suite (lit + unit tests) through ctest.
test: build
	cd $(BUILD) && ctest --output-on-failure

clean:
	rm -rf $(BUILD)
