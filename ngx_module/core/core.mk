# ngx_module/core/: the policy core, pure C with no nginx type: who is
# served next and what it costs (schedulers, virtual token counters, dlpm's
# deficit and the routes among engines, the heap they share, sliding
# windows, OIT's interaction table, quotas' windows in a time zone, a
# key's own quotas read from JSON with jansson or from a keys file's
# columns),
# libfgcore.a.
# The nginx module compiles the same list; the simulator, the load
# generator and the tests link the library.

FG_CORE_SRCS := ngx_module/core/fg_cost.c ngx_module/core/fg_heap.c \
                ngx_module/core/fg_window.c ngx_module/core/fg_sched.c \
                ngx_module/core/fg_sched_prefix.c ngx_module/core/fg_sched_qoe.c \
                ngx_module/core/fg_sched_dispatch.c \
                ngx_module/core/fg_oit.c \
                ngx_module/core/fg_tz.c ngx_module/core/fg_quota.c \
                ngx_module/core/fg_quota_cal.c \
                ngx_module/core/fg_price.c ngx_module/core/fg_quota_json.c \
                ngx_module/core/fg_quota_text.c
FG_CORE_INC  := -Ingx_module/core

$(BUILD)/obj/ngx_module/core/%.o: FG_INC := $(FG_CORE_INC)

$(eval $(call fg_lib,core,$(FG_CORE_SRCS)))
