# sftrace build. `make` builds build/sftrace and build/libsftrace.so.
# `make ARCH=aarch64` cross-builds both into build-aarch64/ with clang and the
# Debian arm64 cross packages (scripts/install-deps.sh installs them).
# Sources are found by directory, so adding a file needs no Makefile edit:
#   src/runtime/*.c, src/runtime/arch/$(ARCH)/*.[cS] -> libsftrace.so (libc + pthread only)
#   src/format/*.c src/lib/*.c src/output/*.c     -> libsfcore.a (shared by CLI and unit tests)
#   src/cli/*.c                                   -> sftrace
#   src/cargo/*.c                                 -> cargo-sftrace (`cargo sftrace`)
#   tests/unit/test_*.c                           -> build/tests/test_* (cmocka)

ARCH    ?= $(shell uname -m)
ifeq ($(ARCH),arm64)
override ARCH := aarch64
endif
ifeq ($(ARCH),$(shell uname -m))
CC      ?= cc
BUILD   ?= build
else
# Cross build: clang targets the architecture; libraries come from Debian's
# multiarch :arm64 packages, the linker from binutils-aarch64-linux-gnu.
ifeq ($(origin CC),default)
CC      := clang --target=$(ARCH)-linux-gnu
endif
# clang turns memcmp() == 0 into libc's bcmp: keep the runtime on its own.
RT_XFLAGS := -fno-builtin-bcmp
# Debian's libisal-dev is not multi-arch: gzip output uses zlib instead.
ISAL    ?= 0
BUILD   ?= build-$(ARCH)
endif
PREFIX  ?= /usr/local
SAN     ?=
WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wstrict-prototypes
CSTD    := -std=gnu11
OPT     ?= -O2 -g
CPPFLAGS_ALL := -D_GNU_SOURCE -Isrc $(CPPFLAGS)
RT_ARCH  := src/runtime/arch/$(ARCH)
CFLAGS_CLI := $(CSTD) $(OPT) $(WARN) $(SAN) $(CFLAGS)
# The runtime runs inside traced programs: no vector registers in our C code
# (trampolines then need not save them on the fast path), no stack protector
# surprises, hidden symbols except the exported ABI.
CFLAGS_RT := $(CSTD) -O2 -g $(WARN) -fPIC -fvisibility=hidden -mgeneral-regs-only \
             -fno-stack-protector -ftls-model=initial-exec $(RT_XFLAGS) $(CFLAGS)
ISAL    ?= 1
ifeq ($(ISAL),1)
LIB_ISAL := -lisal
else
CPPFLAGS_ALL += -DSF_NO_ISAL
endif
LIBS_CLI := -lelf -ldw -liberty $(LIB_ISAL) -lz -lzstd -lpcre2-8 -lsqlite3 -lpthread -lm

ifeq ($(wildcard $(RT_ARCH)/sf_arch.h),)
$(error no runtime for ARCH=$(ARCH): $(RT_ARCH) does not exist)
endif
RT_SRC   := $(wildcard src/runtime/*.c $(RT_ARCH)/*.c) src/format/xray_map.c src/format/filter_file.c src/format/packed.c
RT_ASM   := $(wildcard $(RT_ARCH)/*.S)
CORE_SRC := $(wildcard src/format/*.c src/lib/*.c src/output/*.c)
CLI_SRC  := $(wildcard src/cli/*.c)
CARGO_SRC := $(wildcard src/cargo/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)

RT_OBJ   := $(RT_SRC:%.c=$(BUILD)/rt/%.o) $(RT_ASM:%.S=$(BUILD)/rt/%.o)
CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
CARGO_OBJ := $(CARGO_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/sftrace $(BUILD)/cargo-sftrace $(BUILD)/libsftrace.so $(BUILD)/libsftrace-alloc.so

# -z initfirst: the runtime's constructor runs before every other one
# (init.c, docs/DESIGN.md "Start-up").
$(BUILD)/libsftrace.so: $(RT_OBJ) $(RT_ARCH)/exports.map
	$(CC) -shared -o $@ $(RT_OBJ) -Wl,-z,now -Wl,-z,initfirst -Wl,--version-script=$(RT_ARCH)/exports.map -lpthread -ldl

# record --alloc preloads this one too: the interposed allocator family.
$(BUILD)/libsftrace-alloc.so: $(BUILD)/rt/src/alloc/interpose.o $(BUILD)/rt/src/alloc/opnew.o $(BUILD)/rt/src/runtime/elf_sym.o \
			    $(RT_ARCH)/alloc_exports.map
	$(CC) -shared -o $@ $(filter %.o,$^) -Wl,-z,now -Wl,--version-script=$(RT_ARCH)/alloc_exports.map -ldl

$(BUILD)/rt/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC [rt] $<"
	@$(CC) $(CPPFLAGS_ALL) $(DEPFLAGS) -I$(RT_ARCH) $(CFLAGS_RT) -c -o $@ $<

# The batch scan runs only after the slow path saved the extended state: it
# may use vector registers (src/runtime/batch_scan.c).
$(BUILD)/rt/src/runtime/batch_scan.o: CFLAGS_RT := $(filter-out -mgeneral-regs-only,$(CFLAGS_RT)) -O3

$(BUILD)/rt/%.o: %.S Makefile
	@mkdir -p $(dir $@)
	@echo "  AS [rt] $<"
	@$(CC) $(CPPFLAGS_ALL) $(DEPFLAGS) -I$(RT_ARCH) -fPIC -c -o $@ $<

$(BUILD)/libsfcore.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/obj/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(CPPFLAGS_ALL) $(DEPFLAGS) $(CFLAGS_CLI) -c -o $@ $<

$(BUILD)/sftrace: $(CLI_OBJ) $(BUILD)/libsfcore.a
	$(CC) $(SAN) -o $@ $(CLI_OBJ) $(BUILD)/libsfcore.a $(LIBS_CLI)

# `cargo sftrace`: cargo runs cargo-sftrace from PATH (src/cargo).
$(BUILD)/cargo-sftrace: $(CARGO_OBJ) $(BUILD)/libsfcore.a
	$(CC) $(SAN) -o $@ $(CARGO_OBJ) $(BUILD)/libsfcore.a

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libsfcore.a Makefile
	@mkdir -p $(dir $@)
	@echo "  LD $@"
	@$(CC) $(CPPFLAGS_ALL) -MMD -MP -MF $@.d -I$(RT_ARCH) $(CFLAGS_CLI) -o $@ $< $(BUILD)/libsfcore.a -lcmocka $(LIBS_CLI)

# Each object depends on the headers it includes (and only those): the
# compiler writes them to a .d file beside it (-MMD), with an empty rule per
# header (-MP) so that deleting a header does not break the build. Objects
# also depend on this Makefile, so a change of flags rebuilds them (and an
# object built before dependency tracking gets its .d).
DEPFLAGS := -MMD -MP
-include $(wildcard $(BUILD)/rt/src/*/*.d $(BUILD)/rt/src/*/*/*/*.d $(BUILD)/obj/src/*/*.d $(BUILD)/tests/*.d)

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# The whole suite: unit tests, then the end-to-end cases (which build their
# own fixtures with clang and rustc).
check: all unit
	/usr/bin/python3 tests/run.py

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/sftrace
	install -m 755 $(BUILD)/sftrace $(DESTDIR)$(PREFIX)/bin/sftrace
	install -m 755 $(BUILD)/cargo-sftrace $(DESTDIR)$(PREFIX)/bin/cargo-sftrace
	install -m 755 $(BUILD)/libsftrace.so $(DESTDIR)$(PREFIX)/lib/sftrace/libsftrace.so
	install -m 755 $(BUILD)/libsftrace-alloc.so $(DESTDIR)$(PREFIX)/lib/sftrace/libsftrace-alloc.so
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 docs/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1

clean:
	rm -rf $(BUILD)

.PHONY: all unit check install clean
