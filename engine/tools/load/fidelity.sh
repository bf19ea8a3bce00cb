#!/usr/bin/env bash
# Replay fidelity of fairgate-load against an idle server: the mock upstream
# (t/lib/Fairgate/MockUpstream.pm) on 127.0.0.1, answering at once, 16
# tokens a request.  docs/load.md records the output of:
#
#     engine/tools/load/fidelity.sh [OUTDIR]  (default: build/fidelity)
#
# Two traces, streamed: the overload suite at 10 times its rates (45 req/s
# uniform, 60 s), and the bursts suite at 20 times its speed (Andes's
# cyclic bursts, 1200 s of trace in 60 s, 45 req/s in the burst).  Prints
# the summary's arrival lag, |arrival - scheduled|: max, p99 and mean, in
# milliseconds.  Two minutes.

. "$(dirname "$0")/../sim/script-start.sh"

load=$top/build/fairgate-load
out=${1:-$top/build/fidelity}

need_built "$load" "$sim"
mkdir -p "$out"

# the mock, in the background until this script ends
port_file=$out/mock.port
rm -f "$port_file"
perl -I"$top/t/lib" -MFairgate::MockUpstream -e '
    my $up = Fairgate::MockUpstream->new;
    open my $fh, ">", $ARGV[0] or die; print {$fh} $up->port, "\n";
    close $fh; sleep 1 while getppid() != 1;' "$port_file" 2> /dev/null &
mock=$!
trap 'kill $mock 2>/dev/null || true' EXIT

for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.05; done
url=http://127.0.0.1:$(cat "$port_file")/v1/chat/completions

"$sim" gen --suite overload --duration 60 --rate-scale 10 \
    --out "$out/overload.trace"
"$sim" gen --suite bursts --out "$out/bursts.trace"

run() {
    local name=$1; shift
    "$load" --trace "$out/$name.trace" --url "$url" --quiet \
        --header 'X-Mock-Tokens: 16' --out "$out/$name.res" "$@" \
        > "$out/$name.json"
    sed -n 's/.*"sent": \([0-9]*\).*"arrival_lag_max": \([0-9.]*\), '`
           `'"arrival_lag_p99": \([0-9.]*\), "arrival_lag_mean": '`
           `'\([0-9.]*\).*/\1 \2 \3 \4/p' "$out/$name.json" |
    awk -v n="$name" '{ printf "| %s | %d | %.2f | %.2f | %.2f |\n", n, $1,
                        $2 * 1000, $3 * 1000, $4 * 1000 }'
}

printf '| trace | requests | max (ms) | p99 (ms) | mean (ms) |\n'
printf '|---|---|---|---|---|\n'
run overload
run bursts --time-scale 0.05
