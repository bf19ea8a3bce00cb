# t/soak/: the fault-and-load soak (docs/reliability.md "Soak and
# faults"): mixed tenants against local mode and drop-in on loopback,
# faults injected on a schedule, the invariants checked into
# $(SOAK_OUT)/report.json and report.txt.  t/100-soak.t runs a short one
# in make test.

SOAK_TIME ?= 180
SOAK_OUT  ?= $(BUILD)/soak

.PHONY: soak
soak: all
	perl t/soak/soak.pl --time $(SOAK_TIME) --out $(SOAK_OUT)
