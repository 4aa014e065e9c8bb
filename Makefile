# aicc: top-level Makefile.  Plain GNU make, C11, every warning an error.
#
#   make            build build/aicc (and libaicrt.a, libaicc.a)
#   make check      build, then run unit (cmocka), golden (lit + FileCheck) and conformance
#                   tests, once normally (with Open MPI: the testsuite/mpi runs) and once under
#                   ASan+UBSan built without MPI (the non-MPI build); ends with "N passed, N failed"
#   make demo       the main job on the bundled real model (see README)
#   make docs-numbers  regenerate the figures README.md and docs/ quote (tools/docs-numbers.py;
#                   make check fails when one is stale)
#   make validate   the cost models against published measurements (tools/validate/cases.json)
#   make validate-bands  regenerate targets/bands.def, the error bands, from those residuals
#   make bench      throughput benchmarks, reported as ratios
#   make fuzz       libFuzzer harnesses (clang); FUZZ_SECONDS=600 to run each that long
#   make lint       cppcheck over the sources
#   make install PREFIX=/usr/local
#
# Sources are found by wildcard, so a new file in a listed directory needs no edit here.
# Header dependencies come from -MMD, so editing ir/ops.def rebuilds everything that includes it.

CC      ?= cc
BUILD   ?= build
PREFIX  ?= /usr/local
VERSION := 0.1.0

PKGS    := libxml-2.0 jansson libcgraph libgvc openblas libprotobuf-c libxxhash
DEPS_OK := $(shell pkg-config --exists $(PKGS) cmocka 2>/dev/null && command -v flex >/dev/null && command -v bison >/dev/null && command -v protoc-c >/dev/null && command -v npm >/dev/null && echo yes)
# Open MPI is optional for building but installed for the tests, unless MPI=no is given.
ifneq ($(origin MPI),command line)
DEPS_OK := $(if $(DEPS_OK),$(shell pkg-config --exists ompi-c 2>/dev/null && command -v mpirun >/dev/null && echo yes))
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)
# Open MPI (optional: `aicc run --mpi`, docs/distributed.md), found by pkg-config ompi-c; MPI=no
# builds without it.  Only dist/ and the driver's run command see MPI; libaicrt never does.
MPI     ?= $(if $(shell pkg-config --exists ompi-c 2>/dev/null && echo y),yes,no)
ifeq ($(MPI),yes)
MPI_CFLAGS := -DAICC_MPI $(shell pkg-config --cflags ompi-c)
MPI_LIBS   := $(shell pkg-config --libs ompi-c)
DIST_SRC   := $(sort $(wildcard dist/*.c))
endif

# Numerics are never contracted into FMAs and never built with -ffast-math (DEVELOPERS.md).
OPT     ?= -O2
CFLAGS_ALL = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DAICC_VERSION='"$(VERSION)"' \
	-Wall -Wextra -Werror -Wno-unused-parameter -ffp-contract=off -fno-fast-math -g $(OPT) \
	-MMD -MP -I. -I$(BUILD)/gen $(PKG_CFLAGS) $(SAN) $(CFLAGS)
GEN_CFLAGS = $(filter-out -Wextra,$(CFLAGS_ALL)) -Wno-sign-compare -Wno-unused-function

RT_SRC   := $(sort $(wildcard runtime/*.c runtime/*/*.c))
CC_SRC   := $(sort $(wildcard ir/*.c frontend/*.c frontend/*/*.c passes/*.c targets/*.c targets/*/*.c viz/*.c serve/*.c))
DRV_SRC  := $(sort $(wildcard tools/*.c))
UNIT_SRC := $(sort $(wildcard testsuite/unit/test_*.c))
GEN_C    := $(if $(wildcard frontend/parser.y),$(BUILD)/gen/lexer.c $(BUILD)/gen/parser.c)
GEN_H    := $(if $(wildcard frontend/parser.y),$(BUILD)/gen/parser.h $(BUILD)/gen/lexer.h)
# ONNX: C bindings for onnx.proto (from libonnx-dev) generated with protobuf-c at build time.
ONNX_INC   ?= /usr/include
ONNX_PROTO ?= $(ONNX_INC)/onnx/onnx.proto
GEN_C    += $(BUILD)/gen/onnx/onnx.pb-c.c
GEN_H    += $(BUILD)/gen/onnx/onnx.pb-c.h

RT_OBJ   := $(RT_SRC:%.c=$(BUILD)/%.o)
CC_OBJ   := $(CC_SRC:%.c=$(BUILD)/%.o) $(GEN_C:%.c=%.o)
DRV_OBJ  := $(DRV_SRC:%.c=$(BUILD)/%.o)
DIST_OBJ := $(DIST_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:testsuite/unit/%.c=$(BUILD)/unit/%)
BENCH_SRC:= $(sort $(wildcard testsuite/bench/bench_*.c))
BENCH_BIN:= $(BENCH_SRC:testsuite/bench/%.c=$(BUILD)/bench/%)

.PHONY: all deps check check-fast docs-numbers validate validate-bands demo bench benchbins fuzz fuzzbins unit lint install clean FORCE
all: deps $(BUILD)/aicc

# Install missing Debian packages once, then re-run make so pkg-config flags are picked up.
deps:
ifneq ($(DEPS_OK),yes)
	sh tools/install-deps.sh
endif

$(BUILD)/libaicrt.a: $(RT_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/libaicc.a: $(CC_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/aicc: $(DRV_OBJ) $(DIST_OBJ) $(BUILD)/libaicc.a $(BUILD)/libaicrt.a
	$(CC) $(CFLAGS_ALL) -o $@ $(DRV_OBJ) $(DIST_OBJ) $(BUILD)/libaicc.a $(BUILD)/libaicrt.a $(PKG_LIBS) $(MPI_LIBS) $(LDFLAGS)

# The MPI choice is recorded so that objects built with and without it are never mixed.
$(BUILD)/tools/cmd_run.o $(DIST_OBJ): CFLAGS_ALL += $(MPI_CFLAGS)
$(BUILD)/tools/cmd_run.o $(DIST_OBJ): $(BUILD)/mpi.flag
$(BUILD)/mpi.flag: FORCE
	@mkdir -p $(@D)
	@echo $(MPI) | cmp -s - $@ || echo $(MPI) > $@
FORCE:

# The kernels' elementwise loops are vectorised (no reassociation: -fno-fast-math stays, so a
# vectorised loop computes each element exactly as the scalar one does).  clang (make fuzz) has no
# -fvect-cost-model.
$(BUILD)/runtime/kernels/%.o $(BUILD)/runtime/quant.o $(BUILD)/runtime/numerics.o: CFLAGS_ALL += \
	-ftree-vectorize $(if $(findstring clang,$(CC)),,-fvect-cost-model=dynamic)
$(BUILD)/%.o: %.c | $(GEN_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<

$(BUILD)/gen/parser.c $(BUILD)/gen/parser.h &: frontend/parser.y
	@mkdir -p $(@D)
	bison -Werror -o $(BUILD)/gen/parser.c --header=$(BUILD)/gen/parser.h $<
$(BUILD)/gen/lexer.c $(BUILD)/gen/lexer.h &: frontend/lexer.l $(BUILD)/gen/parser.h
	@mkdir -p $(@D)
	flex -o $(BUILD)/gen/lexer.c --header-file=$(BUILD)/gen/lexer.h $<
$(BUILD)/gen/onnx/onnx.pb-c.c $(BUILD)/gen/onnx/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen -I$(ONNX_INC) $(ONNX_PROTO)
$(BUILD)/gen/%.o: $(BUILD)/gen/%.c $(GEN_H)
	$(CC) $(GEN_CFLAGS) -c -o $@ $<

$(BUILD)/unit/%: testsuite/unit/%.c $(BUILD)/libaicc.a $(BUILD)/libaicrt.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libaicc.a $(BUILD)/libaicrt.a $(PKG_LIBS) $(CMOCKA_LIBS)

$(BUILD)/bench/%: testsuite/bench/%.c $(BUILD)/libaicc.a $(BUILD)/libaicrt.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libaicc.a $(BUILD)/libaicrt.a $(PKG_LIBS)

FUZZ_SRC := $(sort $(wildcard testsuite/fuzz/fuzz_*.c))
$(BUILD)/fuzz/%: testsuite/fuzz/%.c $(BUILD)/libaicc.a $(BUILD)/libaicrt.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -o $@ $< $(BUILD)/libaicc.a $(BUILD)/libaicrt.a $(PKG_LIBS)
fuzzbins: $(FUZZ_SRC:testsuite/fuzz/%.c=$(BUILD)/fuzz/%)

unit: $(UNIT_BIN)
benchbins: $(BENCH_BIN)

# make check: normal build and an ASan+UBSan build (build-san/), all test kinds in both.
check: deps
	$(MAKE) --no-print-directory all unit
	$(MAKE) --no-print-directory BUILD=build-san OPT=-O1 MPI=no \
		SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" all unit
	sh tools/run-tests.sh build build-san

check-fast: all unit
	sh tools/run-tests.sh build

# ---- gpu: make validate (GPU targets' predictions against published measurements) ----
validate: all
	python3 tools/validate.py $(BUILD)
# regenerates targets/bands.def (the error bands the compiler prints) from the validation residuals
validate-bands: all
	python3 tools/validate.py $(BUILD) --write-bands targets/bands.def
	$(MAKE) all
# ---- end gpu ----

docs-numbers: all unit
	python3 tools/docs-numbers.py $(BUILD) --write

demo: deps all
	sh tools/demo.sh $(BUILD)

bench: deps all benchbins
	python3 tools/bench.py $(BUILD)

FUZZ_SECONDS ?= 60
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) sh tools/fuzz.sh

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --std=c11 \
		--suppress=missingIncludeSystem --suppressions-list=tools/cppcheck.supp -I. \
		$(RT_SRC) $(CC_SRC) $(DRV_SRC)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/share/aicc/machines
	install -m 755 $(BUILD)/aicc $(DESTDIR)$(PREFIX)/bin/aicc
	install -m 644 $(BUILD)/libaicrt.a $(DESTDIR)$(PREFIX)/lib/libaicrt.a
	if ls targets/machines/*.xml >/dev/null 2>&1; then install -m 644 targets/machines/* $(DESTDIR)$(PREFIX)/share/aicc/machines/; fi

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(BUILD) -path $(BUILD)/lit -prune -o -name '*.d' -type f -print 2>/dev/null)
