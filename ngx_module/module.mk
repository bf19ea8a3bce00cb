# ngx_module/: the nginx module, ngx_http_fairgate_module.so, built against
# Debian's nginx-dev by nginx's own build (`config` beside the Makefile).
#
# FG_MODULE_SRCS is the module's nginx glue, by folder: the request's path
# (request/), the context it hands down (context/), the HTTP helpers every
# part shares (http/), who the tenants are and what each may do
# (tenants/), quotas and budgets over long windows (quota/), the shared
# zone and the tenants' records in it (zone/),
# local mode's API and engine client (local/), the Redis sync (redis/),
# status and variables (status/), the fairgate_prefix upstream balancer
# (balancer/, a second nginx module in the same shared object).  The
# module also compiles the pure-C parts it uses: the policy core, the
# OpenAI API layer and the Jinja renderer of its chat templates, the model
# (tokenizer) and the shared-memory client.
# `config` reads these same lists from these same fragments.

FG_MODULE_SRCS := ngx_module/ngx_http_fairgate_module.c \
                  ngx_module/request/ngx_http_fairgate_handler.c \
                  ngx_module/context/ngx_http_fairgate_ctx.c \
                  ngx_module/request/ngx_http_fairgate_content.c \
                  ngx_module/request/ngx_http_fairgate_identify.c \
                  ngx_module/request/ngx_http_fairgate_parse.c \
                  ngx_module/request/ngx_http_fairgate_model.c \
                  ngx_module/request/ngx_http_fairgate_admit.c \
                  ngx_module/request/ngx_http_fairgate_queue.c \
                  ngx_module/request/ngx_http_fairgate_filter.c \
                  ngx_module/request/ngx_http_fairgate_qoe.c \
                  ngx_module/request/ngx_http_fairgate_pace.c \
                  ngx_module/request/ngx_http_fairgate_account.c \
                  ngx_module/request/ngx_http_fairgate_error.c \
                  ngx_module/request/ngx_http_fairgate_errors.c \
                  ngx_module/request/ngx_http_fairgate_price.c \
                  ngx_module/http/ngx_http_fairgate_http.c \
                  ngx_module/http/ngx_http_fairgate_prom.c \
                  ngx_module/tenants/ngx_http_fairgate_keys.c \
                  ngx_module/tenants/ngx_http_fairgate_limits.c \
                  ngx_module/tenants/ngx_http_fairgate_interaction.c \
                  ngx_module/tenants/ngx_http_fairgate_profile.c \
                  ngx_module/quota/ngx_http_fairgate_quota_conf.c \
                  ngx_module/quota/ngx_http_fairgate_quota.c \
                  ngx_module/quota/ngx_http_fairgate_quota_send.c \
                  ngx_module/tenants/ngx_http_fairgate_models.c \
                  ngx_module/tenants/ngx_http_fairgate_keystore.c \
                  ngx_module/tenants/ngx_http_fairgate_keycache.c \
                  ngx_module/tenants/ngx_http_fairgate_admin.c \
                  ngx_module/tenants/ngx_http_fairgate_admin_json.c \
                  ngx_module/zone/ngx_http_fairgate_zone_conf.c \
                  ngx_module/zone/ngx_http_fairgate_zone.c \
                  ngx_module/zone/ngx_http_fairgate_tenant.c \
                  ngx_module/zone/ngx_http_fairgate_node.c \
                  ngx_module/zone/ngx_http_fairgate_engines.c \
                  ngx_module/zone/ngx_http_fairgate_dispatch.c \
                  ngx_module/zone/ngx_http_fairgate_workers.c \
                  ngx_module/zone/ngx_http_fairgate_qoe_stats.c \
                  ngx_module/zone/ngx_http_fairgate_clock.c \
                  ngx_module/zone/ngx_http_fairgate_param.c \
                  ngx_module/local/ngx_http_fairgate_engine_conf.c \
                  ngx_module/local/ngx_http_fairgate_engine.c \
                  ngx_module/local/ngx_http_fairgate_api.c \
                  ngx_module/local/ngx_http_fairgate_route.c \
                  ngx_module/local/ngx_http_fairgate_stream.c \
                  ngx_module/local/ngx_http_fairgate_embed.c \
                  ngx_module/local/ngx_http_fairgate_logprobs.c \
                  ngx_module/local/ngx_http_fairgate_choices.c \
                  ngx_module/local/ngx_http_fairgate_tools.c \
                  ngx_module/redis/ngx_http_fairgate_redis_conf.c \
                  ngx_module/redis/ngx_http_fairgate_redis_link.c \
                  ngx_module/redis/ngx_http_fairgate_redis_sentinel.c \
                  ngx_module/redis/ngx_http_fairgate_redis_adapter.c \
                  ngx_module/redis/ngx_http_fairgate_sync.c \
                  ngx_module/redis/ngx_http_fairgate_qcount.c \
                  ngx_module/redis/ngx_http_fairgate_qsync.c \
                  ngx_module/redis/ngx_http_fairgate_qstate.c \
                  ngx_module/redis/ngx_http_fairgate_redis_status.c \
                  ngx_module/redis/ngx_http_fairgate_redis_cmd.c \
                  ngx_module/redis/ngx_http_fairgate_redis_args.c \
                  ngx_module/status/ngx_http_fairgate_status.c \
                  ngx_module/status/ngx_http_fairgate_status_json.c \
                  ngx_module/status/ngx_http_fairgate_status_prom.c \
                  ngx_module/status/ngx_http_fairgate_status_walk.c \
                  ngx_module/status/ngx_http_fairgate_status_quota.c \
                  ngx_module/status/ngx_http_fairgate_status_out.c \
                  ngx_module/status/ngx_http_fairgate_dashboard.c \
                  ngx_module/status/ngx_http_fairgate_dashboard_page.c \
                  ngx_module/status/ngx_http_fairgate_variables.c \
                  ngx_module/status/ngx_http_fairgate_usage_log.c \
                  ngx_module/balancer/ngx_http_fairgate_prefix_module.c \
                  ngx_module/balancer/ngx_http_fairgate_prefix_index.c \
                  ngx_module/balancer/ngx_http_fairgate_prefix_peer.c

# everything the module is compiled from, and the fragments that list it
# (`config` names the same parts)
NGX_MODULE_SRCS := $(FG_MODULE_SRCS) $(FG_CORE_SRCS) $(FG_JINJA_SRCS) \
                   $(FG_OPENAI_SRCS) $(FG_GRAMMAR_SRCS) $(FG_MODEL_SRCS) \
                   $(FG_SHM_SRCS)
NGX_MODULE_DIRS := $(sort $(dir $(NGX_MODULE_SRCS))) engine/util/
NGX_MODULE_DEPS := $(NGX_MODULE_SRCS) \
                   $(wildcard $(addsuffix *.h,$(NGX_MODULE_DIRS)))
NGX_MODULE_MK   := ngx_module/module.mk ngx_module/core/core.mk \
                   ngx_module/jinja/jinja.mk ngx_module/openai/openai.mk \
                   engine/grammar/grammar.mk engine/model/model.mk \
                   engine/shm/shm.mk

# nginx's configure writes only into --builddir; it runs again when config
# or a list changes.  The Debian flags make the module binary compatible.
$(BUILD)/nginx/Makefile: config $(NGX_MODULE_MK)
	@mkdir -p $(BUILD)/nginx
	cd $(NGX_SRC) && . ./conf_flags && ./configure \
	    --with-cc-opt="$$(dpkg-buildflags --get CFLAGS) -fPIC $$(dpkg-buildflags --get CPPFLAGS) $(FG_SAN)" \
	    --with-ld-opt="$$(dpkg-buildflags --get LDFLAGS) -fPIC $(FG_SAN)" \
	    "$${NGX_CONF_FLAGS[@]}" \
	    --add-dynamic-module=$(CURDIR) \
	    --builddir=$(ABS_BUILD)/nginx > $(ABS_BUILD)/nginx-configure.log 2>&1 \
	    || { tail -20 $(ABS_BUILD)/nginx-configure.log; exit 1; }

# The module is installed as a new file renamed into place: a running
# nginx maps the old one, and rewriting it in place would crash it.
$(BUILD)/ngx_http_fairgate_module.so: $(BUILD)/nginx/Makefile $(NGX_MODULE_DEPS)
	$(MAKE) -s -f $(ABS_BUILD)/nginx/Makefile -C $(NGX_SRC) modules
	cp $(BUILD)/nginx/ngx_http_fairgate_module.so $@.tmp
	mv -f $@.tmp $@

FG_TOOLS += $(BUILD)/ngx_http_fairgate_module.so

# fairgate-keyhash: the fairgate_keys line of a key; "make key" makes one
$(BUILD)/obj/ngx_module/tenants/fairgate_keyhash.o: FG_INC :=

$(BUILD)/fairgate-keyhash: $(BUILD)/obj/ngx_module/tenants/fairgate_keyhash.o
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

# the dashboard's page as C (fairgate_dashboard): written again from
# dashboard.html by "make dashboard", and committed, so that a module built
# by nginx's ./configure alone serves it; t/030-dashboard.t fails when the
# two differ
FG_DASHBOARD := ngx_module/status/ngx_http_fairgate_dashboard_page.c

.PHONY: dashboard
dashboard:
	perl ngx_module/status/dashboard_embed.pl \
	    ngx_module/status/dashboard.html > $(FG_DASHBOARD).tmp
	mv -f $(FG_DASHBOARD).tmp $(FG_DASHBOARD)
