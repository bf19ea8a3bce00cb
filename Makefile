# fairgate: `make` builds everything into build/, `make test` runs every test.
#
# Each part of the tree is a folder with a build fragment (PART.mk) that owns
# its source list and builds its library or program; nginx's config reads the
# module's lists from the same fragments.  A part also says which folders its
# files may include (FG_INC of its objects), so the layering that
# docs/architecture.md draws is the one the compiler sees.

SHELL      := /bin/bash
BUILD      := build
ABS_BUILD  := $(abspath $(BUILD))
NGX_SRC    ?= /usr/share/nginx/src

# a list's words, each once, in their first order
fg_uniq = $(if $1,$(firstword $1) $(call fg_uniq,$(filter-out \
              $(firstword $1),$1)))

CFLAGS     ?= -O2 -g
FG_INC      =
FG_CFLAGS   = -std=gnu11 -Wall -Wextra -Werror -fPIC -pthread \
              $(call fg_uniq,$(FG_INC)) $(CFLAGS) $(FG_SAN)
FG_LDFLAGS  = -pthread $(LDFLAGS) $(FG_SAN)
# FG_SAN: sanitizer flags of every object and link (t/asan.mk)
FG_SAN     ?=

# filled by the fragments
FG_TOOLS   :=
FG_TESTS   :=
FG_BENCHES :=

# the objects of a list of sources
fg_objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

# $(call fg_lib,NAME,SOURCES): the part's library, build/libfgNAME.a
define fg_lib
$(BUILD)/libfg$(1).a: $(call fg_objs,$(2))
	rm -f $$@
	ar rcs $$@ $$^

FG_TOOLS += $(BUILD)/libfg$(1).a
endef

.PHONY: all test bench clean run

all:

# the parts, from the bottom up (docs/architecture.md)
include engine/util/util.mk
include kernels/kernels.mk
include engine/model/model.mk
include engine/shm/shm.mk
include engine/backends/backends.mk
include engine/grammar/grammar.mk
include engine/kv/kv.mk
include engine/batch/batch.mk
include engine/mux/mux.mk
include engine/serve/serve.mk
include ngx_module/core/core.mk
include ngx_module/jinja/jinja.mk
include ngx_module/openai/openai.mk
include ngx_module/module.mk
include engine/tools/tools.mk
include t/t.mk
include conf/install/install.mk

all: $(FG_TOOLS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

bench: all $(FG_BENCHES)
	@for b in $(FG_BENCHES); do echo "== $$b"; $$b || exit 1; done

# make run and make test first install what they need (conf/deps.sh: the
# Debian packages, t/node's npm packages), then build and go on in a second
# make, so that under -j nothing compiles before the packages are there.
# DEPS=no skips the step.
DEPS ?= yes

ifneq ($(DEPS),no)

run test:
	@$(SHELL) conf/deps.sh $@
	@$(MAKE) --no-print-directory $@ DEPS=no

else

# prove runs the C unit tests (TAP binaries) and the t/*.t nginx tests.
test: all $(FG_TESTS)
	prove --exec '' $(FG_TESTS) $(sort $(wildcard t/*.t))

# the gateway and its engine in the foreground (conf/run.sh): make run
# PORT=8081, FAIRGATE_MODEL=other.gguf make run
run: all $(BUILD)/fairgate-engine $(BUILD)/fairgate-gguf-gen
	@FAIRGATE_PORT=$(or $(PORT),8080) $(SHELL) conf/run.sh

endif

# make deps: everything conf/deps.sh knows, the developers' tools too
.PHONY: deps
deps:
	@$(SHELL) conf/deps.sh all

clean:
	rm -rf $(BUILD)
