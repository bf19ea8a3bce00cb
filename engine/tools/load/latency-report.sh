#!/usr/bin/env bash
# Plots of a results file (fairgate-load's or fairgate-sim's), each readable
# on its own:
#
#     engine/tools/load/latency-report.sh RESULTS [OUTDIR] \
#         [fairgate-load analyze options]
#
# writes to OUTDIR (default build/latency):
#     latency.json   fairgate-load analyze's figures (fairness and latency)
#     service.png    service rate per client over time
#     response.png   end-to-end latency of each request per client, by arrival
#     ttft.png       time to first token of each request, by arrival
#     cdf-ttft.png   CDF of TTFT per client
#     cdf-e2e.png    CDF of end-to-end latency per client
# and the gnuplot data beside them (docs/load.md says what each holds).

. "$(dirname "$0")/../sim/script-start.sh"

load=$top/build/fairgate-load

[ $# -ge 1 ] || { echo "usage: $0 RESULTS [OUTDIR] [analyze options]" >&2;
                  exit 2; }
results=$1
out=${2:-$top/build/latency}
shift $(($# >= 2 ? 2 : 1))

need_built "$load"
command -v gnuplot > /dev/null || { echo "gnuplot is not installed" >&2;
                                    exit 1; }

mkdir -p "$out"
"$load" analyze --results "$results" --series-dir "$out" "$@" \
    > "$out/latency.json"

name=$(basename "$results")
mapfile -t clients < "$out/clients.txt"

# one plot clause a client; ' doubled inside gnuplot's single quotes
clauses() {
    local file=$1 using=$2 style=$3 i plot="" t
    for ((i = 0; i < ${#clients[@]}; i++)); do
        t=${clients[$i]//\'/\'\'}
        plot+="'$file' index $i using $using with $style title '$t', "
    done
    printf '%s' "${plot%, }"
}

service_clauses() {
    local i plot="" t
    for ((i = 0; i < ${#clients[@]}; i++)); do
        t=${clients[$i]//\'/\'\'}
        plot+="'$out/service.dat' using 1:$((i + 2)) with lines lw 2 "
        plot+="title '$t', "
    done
    printf '%s' "${plot%, }"
}

plot() {
    local png=$1 title=$2 xlabel=$3 ylabel=$4 body=$5 extra=${6:-}
    gnuplot <<GNUPLOT
set terminal png size 900,500 noenhanced
set output '$out/$png'
set title '$name: $title'
set xlabel '$xlabel'
set ylabel '$ylabel'
set key outside right
set grid
$extra
plot $body
GNUPLOT
}

plot service.png "service received per client" "time (s)" \
    "service (cost units / s)" "$(service_clauses)" "set yrange [0:*]"
plot response.png "end-to-end latency of each request" \
    "arrival (s)" "latency (s)" "$(clauses "$out/response.dat" 1:3 points)" \
    "set yrange [0:*]"
plot ttft.png "time to first token of each request" \
    "arrival (s)" "TTFT (s)" "$(clauses "$out/response.dat" 1:2 points)" \
    "set yrange [0:*]"
plot cdf-ttft.png "CDF of time to first token" "TTFT (s)" \
    "fraction of requests served" "$(clauses "$out/cdf.dat" 2:1 steps)" \
    "set yrange [0:1]"
plot cdf-e2e.png "CDF of end-to-end latency" "latency (s)" \
    "fraction of requests served" "$(clauses "$out/cdf.dat" 3:1 steps)" \
    "set yrange [0:1]"

echo "$out: latency.json service.png response.png ttft.png cdf-ttft.png" \
     "cdf-e2e.png"
