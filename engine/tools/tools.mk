# engine/tools/: the tools, on top of what they make or measure, each in
# its own folder with its own fragment:
#
#     gguf/   the GGUF writer and the random-weight model generator,
#             fairgate-gguf-gen (libfggen.a)
#     sim/    fairgate-sim, the policy core before simulated engines, and
#             its experiments' scripts (libfgsim.a)
#     load/   fairgate-load, traces replayed against an endpoint, and the
#             gateway's suites (libfgload.a)
#
# Included after the parts they link (the simulator compiles against the
# policy core, ngx_module/core/), before the tests.

include engine/tools/gguf/gguf.mk
include engine/tools/sim/sim.mk
include engine/tools/load/load.mk
