# ngx_module/: the pure-C policy core (linked by tools and tests) and the
# nginx dynamic module built against Debian's nginx-dev.

FG_CORE_SRCS := ngx_module/fg_cost.c ngx_module/fg_heap.c \
                ngx_module/fg_oit.c \
                ngx_module/fg_window.c ngx_module/fg_sched.c
FG_CORE_OBJS := $(FG_CORE_SRCS:%.c=$(BUILD)/obj/%.o)

$(BUILD)/libfgcore.a: $(FG_CORE_OBJS)
	rm -f $@
	ar rcs $@ $^

# nginx's configure writes only into --builddir; it runs again when config
# changes.  The Debian flags make the module binary compatible.
NGX_MODULE_SRCS := $(wildcard ngx_module/*.c ngx_module/*.h) \
                   $(wildcard engine/fg_gguf.[ch] engine/fg_tokenizer.[ch] \
                              engine/fg_unicode.h engine/fg_shm_*.[ch])

$(BUILD)/nginx/Makefile: config
	@mkdir -p $(BUILD)/nginx
	cd $(NGX_SRC) && . ./conf_flags && ./configure \
	    --with-cc-opt="$$(dpkg-buildflags --get CFLAGS) -fPIC $$(dpkg-buildflags --get CPPFLAGS)" \
	    --with-ld-opt="$$(dpkg-buildflags --get LDFLAGS) -fPIC" \
	    "$${NGX_CONF_FLAGS[@]}" \
	    --add-dynamic-module=$(CURDIR) \
	    --builddir=$(ABS_BUILD)/nginx > $(ABS_BUILD)/nginx-configure.log 2>&1 \
	    || { tail -20 $(ABS_BUILD)/nginx-configure.log; exit 1; }

# The module is installed as a new file renamed into place: a running
# nginx maps the old one, and rewriting it in place would crash it.
$(BUILD)/ngx_http_fairgate_module.so: $(BUILD)/nginx/Makefile $(NGX_MODULE_SRCS)
	$(MAKE) -s -f $(ABS_BUILD)/nginx/Makefile -C $(NGX_SRC) modules
	cp $(BUILD)/nginx/ngx_http_fairgate_module.so $@.tmp
	mv -f $@.tmp $@

FG_TOOLS += $(BUILD)/libfgcore.a $(BUILD)/ngx_http_fairgate_module.so

# fairgate-keyhash: the fairgate_keys line of a key; "make key" makes one
$(BUILD)/fairgate-keyhash: $(BUILD)/obj/ngx_module/fairgate_keyhash.o
	$(CC) $(FG_LDFLAGS) -o $@ $^ -lcrypto

FG_TOOLS += $(BUILD)/fairgate-keyhash

.PHONY: key
key: $(BUILD)/fairgate-keyhash
	@test -n "$(TENANT)" -a -n "$(APP)" || \
	    { echo "usage: make key TENANT=user APP=app|- [WEIGHT=1]" \
	           "[LIMITS='rpm=N tpm=N']" >&2; exit 2; }
	@k=$$(mktemp) && \
	    $(BUILD)/fairgate-keyhash -n "$(TENANT)" "$(APP)" \
	        "$(or $(WEIGHT),1)" $(LIMITS) 2> $$k > $$k.line && \
	    echo "key (give it to the tenant, it is not kept): $$(cat $$k)" && \
	    echo "line for the fairgate_keys file:" && cat $$k.line; \
	    rc=$$?; rm -f $$k $$k.line; exit $$rc

# the JSON scanner: pure C, linked into the module; its unit test
$(BUILD)/t/test_json: $(BUILD)/obj/t/unit/test_json.o \
                      $(BUILD)/obj/ngx_module/fg_json.o
	@mkdir -p $(dir $@)
	$(CC) $(FG_LDFLAGS) -o $@ $^

FG_TESTS += $(BUILD)/t/test_json

# drop-in benchmark: fairgate against plain proxy_pass and limit_req (wrk)
FG_BENCHES += t/bench/bench_dropin.pl

# libFuzzer target of the JSON scanner, differential against jansson; not
# part of `make test`: `make fuzz-json-run FUZZ_TIME=300`
$(BUILD)/fuzz/fuzz_json: t/unit/fuzz_json.c ngx_module/fg_json.c \
                         ngx_module/fg_json.h
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -Ingx_module -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -o $@ t/unit/fuzz_json.c \
	    ngx_module/fg_json.c -ljansson

.PHONY: fuzz-json fuzz-json-run
fuzz-json: $(BUILD)/fuzz/fuzz_json

fuzz-json-run: $(BUILD)/fuzz/fuzz_json
	@mkdir -p $(BUILD)/fuzz/corpus-json
	$(BUILD)/fuzz/fuzz_json -max_total_time=$${FUZZ_TIME:-60} \
	    -max_len=4096 $(BUILD)/fuzz/corpus-json
