# t/asan/: make test-asan, the whole suite under AddressSanitizer and
# UndefinedBehaviorSanitizer (docs/reliability.md "Sanitizers").
#
# A second make builds everything into build/asan/ with FG_SAN (every
# object and link, the nginx module through its --with-cc-opt), then runs
# the unit tests and t/*.t against that build: the harness takes
# FAIRGATE_BUILD for the module, the engine and the tools, and
# FAIRGATE_NGINX is t/asan/nginx.sh, Debian's nginx with the ASan runtime
# preloaded.  Every process writes its reports into build/asan/reports/
# (log_path), where workers and engines' reports would otherwise be lost
# in closed stderrs; any report there fails the target after the tests.
# The CUDA emulation's tests are left to make test-cuda-asan (cuda_emu.mk).

FG_ASAN_BUILD := build/asan
FG_SAN_FLAGS  := -fsanitize=address,undefined \
                 -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
                 -static-libubsan
FG_ASAN_DIR    = $(abspath $(FG_ASAN_BUILD))/reports
FG_ASAN_TESTS  = $(foreach t,$(FG_TESTS),$(if $(findstring cuda,$(notdir \
                     $t))$(findstring simt,$(notdir $t)),,$t))

.PHONY: test-asan test-asan-build test-asan-run

test-asan:
	@$(MAKE) --no-print-directory BUILD=$(FG_ASAN_BUILD) \
	    FG_SAN='$(FG_SAN_FLAGS)' test-asan-run

# these two run inside the second make (BUILD=build/asan)
test-asan-build: all $(FG_ASAN_TESTS)

test-asan-run: test-asan-build
	@rm -rf $(FG_ASAN_DIR) && mkdir -p -m 1777 $(FG_ASAN_DIR)
	@export FAIRGATE_BUILD=$(ABS_BUILD) \
	    FAIRGATE_NGINX=$(CURDIR)/t/asan/nginx.sh \
	    FG_SAN='$(FG_SAN)' FAIRGATE_SAN_DIR=$(FG_ASAN_DIR) \
	    ASAN_OPTIONS=log_path=$(FG_ASAN_DIR)/asan:detect_leaks=1 \
	    UBSAN_OPTIONS=log_path=$(FG_ASAN_DIR)/ubsan:print_stacktrace=1; \
	    prove --exec '' $(FG_ASAN_TESTS) $(sort $(wildcard t/*.t)); \
	    rc=$$?; $(SHELL) t/asan/reports.sh $(FG_ASAN_DIR) || rc=1; \
	    exit $$rc
