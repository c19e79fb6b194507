# Kiln: top-level entry points. `make run` and `make test` install what is
# missing (Debian packages only), build, and run.
BUILD ?= build
JOBS ?= $(shell nproc)
MODELS ?= $(BUILD)/models

.PHONY: setup configure build run test install deb conformance conformance-expected fuzz sanitize clean

setup:
	scripts/setup.sh

$(BUILD)/build.ninja:
	cmake -G Ninja -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit

configure: setup $(BUILD)/build.ninja

build: configure
	ninja -C $(BUILD) -j $(JOBS)

# The main job: compile the bundled example model for the CPU into a .kiln
# artifact, run it on a seeded random image and print its outputs.
run: build
	$(BUILD)/bin/kiln-compile examples/tiny_cnn.onnxtxt --target=cpu,gfx942 --emulation -o $(BUILD)/tiny_cnn.kiln
	$(BUILD)/bin/kiln-run $(BUILD)/tiny_cnn.kiln --device=cpu --input=image=random \
	  --output-dir=$(BUILD)/tiny_cnn.out
	/usr/bin/python3 -c "import numpy as np; print('probabilities =', np.load('$(BUILD)/tiny_cnn.out/probabilities.npy'))"
	@echo "The same model through its gfx942 (MI300X) kernels, emulated on the CPU:"
	$(BUILD)/bin/kiln-run $(BUILD)/tiny_cnn.kiln --device=emu:gfx942 --input=image=random \
	  --output-dir=$(BUILD)/tiny_cnn.emu-gfx942.out

# The whole suite (lit, unit, fuzz regressions, e2e, ONNX backend
# conformance against its expected-failure lists) through ctest, JOBS at once.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Installs the tools, the runtime (shared and static, headers, CMake package,
# pkg-config file) and the Python bindings under PREFIX; see docs/install.md.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Debian packages (kiln-runtime, kiln-runtime-dev, kiln-serve, kiln-compiler,
# python3-kiln) into $(BUILD)/packages.
deb: build
	cd $(BUILD) && cpack -G DEB

# The ONNX backend suite on cpu and every emulated gfx target: prints
# "N passed, M failed" per target and suite and regenerates docs/conformance.md.
CONFORMANCE_DEVICES ?= cpu,emu:gfx942,emu:gfx950,emu:gfx1250,emu:gfx1100,emu:gfx1201
conformance: build
	/usr/bin/python3 test/conformance/run_conformance.py --build $(BUILD) \
	  --targets $(CONFORMANCE_DEVICES) --jobs $(JOBS) --results $(BUILD)/conformance.json
	/usr/bin/python3 test/conformance/run_conformance.py --targets $(CONFORMANCE_DEVICES) \
	  --from-results $(BUILD)/conformance.json --report docs/conformance.md

# Rewrites the expected-failure lists ctest checks (test/conformance/*.txt)
# from a run on the devices ctest covers.
conformance-expected: build
	/usr/bin/python3 test/conformance/run_conformance.py --build $(BUILD) \
	  --targets cpu,emu:gfx942,emu:gfx1100 --jobs $(JOBS) --write-expected test/conformance

# libFuzzer targets (clang-22, build-fuzz), each run for FUZZ_SECONDS seconds
# on seeds from the tests; see docs/testing.md.
FUZZ_SECONDS ?= 60
fuzz: setup
	FUZZ_SECONDS=$(FUZZ_SECONDS) KILN_BUILD=$(BUILD) scripts/fuzz.sh

# ASan+UBSan (build-asan) and TSan (build-tsan) builds of the runtime and the
# unit tests, and their runs; see docs/testing.md.
sanitize: setup
	SANITIZE_JOBS=$(JOBS) scripts/sanitize.sh

clean:
	rm -rf $(BUILD)
