# sftrace build. `make` builds build/sftrace and build/libsftrace.so.
# Sources are found by directory, so adding a file needs no Makefile edit:
#   src/runtime/*.c, src/runtime/arch/x86_64/*.S  -> libsftrace.so (libc + pthread only)
#   src/format/*.c src/lib/*.c src/output/*.c     -> libsfcore.a (shared by CLI and unit tests)
#   src/cli/*.c                                   -> sftrace
#   tests/unit/test_*.c                           -> build/tests/test_* (cmocka)

CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
SAN     ?=
WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wstrict-prototypes
CSTD    := -std=gnu11
OPT     ?= -O2 -g
CPPFLAGS_ALL := -D_GNU_SOURCE -Isrc $(CPPFLAGS)
CFLAGS_CLI := $(CSTD) $(OPT) $(WARN) $(SAN) $(CFLAGS)
# The runtime runs inside traced programs: no vector registers in our C code
# (trampolines then need not save them on the fast path), no stack protector
# surprises, hidden symbols except the exported ABI.
CFLAGS_RT := $(CSTD) -O2 -g $(WARN) -fPIC -fvisibility=hidden -mgeneral-regs-only \
             -fno-stack-protector -ftls-model=initial-exec $(CFLAGS)
LIBS_CLI := -lelf -ldw -liberty -lisal -lz -lzstd -lpcre2-8 -lsqlite3 -lpthread -lm

RT_SRC   := $(wildcard src/runtime/*.c) src/format/xray_map.c src/format/filter_file.c src/format/packed.c
RT_ASM   := $(wildcard src/runtime/arch/x86_64/*.S)
CORE_SRC := $(wildcard src/format/*.c src/lib/*.c src/output/*.c)
CLI_SRC  := $(wildcard src/cli/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)

RT_OBJ   := $(RT_SRC:%.c=$(BUILD)/rt/%.o) $(RT_ASM:%.S=$(BUILD)/rt/%.o)
CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/sftrace $(BUILD)/libsftrace.so $(BUILD)/libsftrace-alloc.so

$(BUILD)/libsftrace.so: $(RT_OBJ)
	$(CC) -shared -o $@ $^ -Wl,-z,now -Wl,--version-script=src/runtime/exports.map -lpthread -ldl

# record --alloc preloads this one too: the interposed allocator family.
$(BUILD)/libsftrace-alloc.so: $(BUILD)/rt/src/alloc/interpose.o
	$(CC) -shared -o $@ $^ -Wl,-z,now -ldl

$(BUILD)/rt/%.o: %.c $(wildcard src/runtime/*.h src/format/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC [rt] $<"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS_RT) -c -o $@ $<

# The batch scan runs only after the slow path saved the extended state: it
# may use vector registers (src/runtime/batch_scan.c).
$(BUILD)/rt/src/runtime/batch_scan.o: CFLAGS_RT := $(filter-out -mgeneral-regs-only,$(CFLAGS_RT)) -O3

$(BUILD)/rt/%.o: %.S
	@mkdir -p $(dir $@)
	@echo "  AS [rt] $<"
	@$(CC) $(CPPFLAGS_ALL) -fPIC -c -o $@ $<

$(BUILD)/libsfcore.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/obj/%.o: %.c $(wildcard src/*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS_CLI) -c -o $@ $<

$(BUILD)/sftrace: $(CLI_OBJ) $(BUILD)/libsfcore.a
	$(CC) $(SAN) -o $@ $(CLI_OBJ) $(BUILD)/libsfcore.a $(LIBS_CLI)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libsfcore.a
	@mkdir -p $(dir $@)
	@echo "  LD $@"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS_CLI) -o $@ $< $(BUILD)/libsfcore.a -lcmocka $(LIBS_CLI)

$(BUILD)/tests/test_trim: src/runtime/trim.c src/runtime/runtime.h

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# The whole suite: unit tests, then the end-to-end cases (which build their
# own fixtures with clang and rustc).
check: all unit
	/usr/bin/python3 tests/run.py

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/sftrace
	install -m 755 $(BUILD)/sftrace $(DESTDIR)$(PREFIX)/bin/sftrace
	install -m 755 $(BUILD)/libsftrace.so $(DESTDIR)$(PREFIX)/lib/sftrace/libsftrace.so
	install -m 755 $(BUILD)/libsftrace-alloc.so $(DESTDIR)$(PREFIX)/lib/sftrace/libsftrace-alloc.so
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 docs/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1

clean:
	rm -rf $(BUILD)

.PHONY: all unit check install clean
