# fairgate: `make` builds everything into build/, `make test` runs every test.
#
# Each part of the tree adds its own targets in a fragment included below
# (ngx_module/module.mk, engine/engine.mk, t/t.mk, engine/cuda.mk), so parts
# grow apart.

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
include engine/cuda.mk

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

# the gateway and its engine in the foreground (conf/run.sh): make run PORT=8081,
# FAIRGATE_MODEL=other.gguf make run
run: all $(BUILD)/fairgate-engine $(BUILD)/fairgate-gguf-gen
	@FAIRGATE_PORT=$(or $(PORT),8080) $(SHELL) conf/run.sh

clean:
	rm -rf $(BUILD)
