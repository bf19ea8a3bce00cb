# fairgate: `make` builds everything into build/, `make test` runs every test.
#
# Each part of the tree adds its own targets in a fragment included below
# (ngx_module/module.mk, engine/engine.mk, t/t.mk), so parts grow apart.

SHELL      := /bin/bash
BUILD      := build
ABS_BUILD  := $(abspath $(BUILD))
NGX_SRC    ?= /usr/share/nginx/src

CFLAGS     ?= -O2 -g
FG_CFLAGS   = -std=gnu11 -Wall -Wextra -Werror -fPIC -pthread \
              -Ingx_module -Iengine -Ikernels $(CFLAGS)
FG_LDFLAGS  = -pthread $(LDFLAGS)

# filled by the fragments
FG_TOOLS   :=
FG_TESTS   :=
FG_BENCHES :=

.PHONY: all test bench clean run

# keep objects that pattern rules made on the way: no rebuild on each test
.SECONDARY:

all:

include ngx_module/module.mk
include engine/engine.mk
include t/t.mk

all: $(FG_TOOLS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# prove runs the C unit tests (TAP binaries) and the t/*.t nginx tests.
test: all $(FG_TESTS)
	prove --exec '' $(FG_TESTS) $(sort $(wildcard t/*.t))

bench: all $(FG_BENCHES)
	@for b in $(FG_BENCHES); do echo "== $$b"; $$b || exit 1; done

run:
	@echo "make run: not yet; the engine and local mode arrive with" \
	      "issues 4 and 5.  The simulator runs now: see README.md."

clean:
	rm -rf $(BUILD)
