#!/usr/bin/env bash
# Several models in one engine through the real gateway: nginx with the
# fairgate module in local mode, one fairgate-engine process serving three
# models of different shapes on three segments, one zone in front;
# fairgate-load replays the multi-model suite (per-model rates by a power
# law of ALPHA), each request asking for its model.  The engine shares its
# KV pool by --mux spatial, temporal or muxserve.
#
# BACKEND=sim (the default): generated GGUFs (stories260K's tokenizer) on
# the sim backend at the gpu step model's speed, the trace's clock
# compressed by TIME_SCALE; the simulator runs each mode beside it on the
# same trace, with the same shapes.
# BACKEND=cpu: real computation on the cpu backend in real time:
# stories260K and two generated models of other shapes, the suite's
# lengths scaled by LEN_SCALE (0.25: stories260K's context is 512) over
# DURATION (60) seconds; no simulator beside it (its step model is a
# GPU's).
#
#     t/load/mux-suite.sh [OUTDIR]      (default: build/mux-suite)
#
# Environment: ALPHAS (1.3 2.1), LOAD (the suite's --rate-scale: 0.3;
# cpu 2), MODES (spatial temporal muxserve), HEAD_BLOCKS (the pool:
# 400,000 head blocks; cpu 12,000), TIME_SCALE (0.025; cpu 1), SEED (1),
# WORDS (0.52), PORT (18520), MAX_TRACE_S (2400), FAIRGATE_NGINX.  About
# six minutes (cpu: four).  Writes OUTDIR/table.md (docs/multi-model.md
# records it).  Loopback only; nginx, the engine and its segments are
# removed on exit, whatever the exit.

set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

say() { printf 'mux-suite: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

out=$(realpath -m "${1:-build/mux-suite}")
backend=${BACKEND:-sim}
alphas=(${ALPHAS:-1.3 2.1})
modes=(${MODES:-spatial temporal muxserve})
seed=${SEED:-1}
case $backend in
sim)
    rate=${LOAD:-0.3}
    pool=${HEAD_BLOCKS:-400000}
    ts=${TIME_SCALE:-0.025}
    duration=300
    lens=1
    ;;
cpu)
    rate=${LOAD:-2}
    pool=${HEAD_BLOCKS:-12000}
    ts=${TIME_SCALE:-1}
    duration=${DURATION:-60}
    lens=${LEN_SCALE:-0.25}
    ;;
*)
    die "BACKEND=$backend: expected sim or cpu"
esac
words=${WORDS:-0.52}
port=${PORT:-18520}
step=gpu

. t/load/gateway-run.sh
gateway_tools
gateway_clock "$ts" "${MAX_TRACE_S:-2400}"
gateway_port "$port"

mkdir -p "$out"
shm=/fg-mux-$$

gateway_init sim

# three shapes: name layers heads kv-heads embedding feed-forward (cpu:
# m1 is stories260K itself, its real weights)
if [ "$backend" = sim ]; then
    shapes=("m0 8 8 8 64 172" "m1 5 8 4 64 172" "m2 3 4 2 48 128")
else
    shapes=("m0 8 8 8 128 344" "m1 5 8 4 64 172 stories"
            "m2 3 4 2 48 128")
fi
models=$out/models.json

{
    printf '['
    sep=
    for s in "${shapes[@]}"; do
        read -r name layers heads kv embd ff real <<< "$s"
        f=$out/$name.gguf
        [ -z "${real:-}" ] || cp "$stories" "$f"
        [ -f "$f" ] || build/fairgate-gguf-gen -o "$f" --layers "$layers" \
            --heads "$heads" --kv-heads "$kv" --embd "$embd" --ff "$ff" \
            --ctx 4096 --tokenizer "$stories" --name "$name" > /dev/null \
            || die "could not generate $f"
        printf '%s\n  {"name": "%s", "layers": %d, "kv_heads": %d, ' \
            "$sep" "$name" "$layers" "$kv"
        printf '"head_dim": %d, "engine": "%s"}' $(( embd / heads )) "$step"
        sep=,
    done
    printf '\n]\n'
} > "$models"

# the models' rates in a trace: requests per second of each, in order
rates() {   # trace
    perl -MJSON::PP -ne '
        my $r = decode_json($_);
        $n{$r->{model}}++;
        $t = $r->{t} if $r->{t} > $t;
        END { printf "%g ", $n{$_} / ($t || 1) for qw(m0 m1 m2) }
    ' "$1"
}

# tokens/s on the trace's clock of a results file, all and each model's
# (the suite's client is its model), as the simulator counts them: the
# output of requests finished between the first and the last arrival
served() {   # results-file time-scale
    perl -MJSON::PP -ne '
        BEGIN { $ts = shift }
        my $r = decode_json($_);
        push @req, $r;
        $first = $r->{arrival} if !defined $first || $r->{arrival} < $first;
        $last = $r->{arrival} if $r->{arrival} > $last;
        END {
            my $span = ($last - $first) / $ts || 1;
            for my $r (@req) {
                next unless $r->{status} eq "ok" && $r->{finish} <= $last;
                $tok{$r->{client}} += $r->{output_tokens};
                $all += $r->{output_tokens};
            }
            printf "%.0f (%s)", $all / $span,
                join(" / ", map { sprintf "%.0f", ($tok{$_} // 0) / $span }
                            qw(m0 m1 m2));
        }
    ' "$2" "$1"
}

# the lengths of a trace scaled by FACTOR (at least 1 token), in place
scale_lengths() {   # factor trace
    [ "$1" = 1 ] && return 0
    perl -i -pe 'BEGIN { $f = shift }
        s/"(input_tokens|output_tokens)": (\d+)/
          sprintf "\"%s\": %d", $1, $2 * $f < 1 ? 1 : $2 * $f + 0.5/ge' \
        "$1" "$2"
}

# the simulator on the same trace and shapes (sim backend only)
simulate() {   # mode trace pre
    [ "$backend" = sim ] || return 0
    say "alpha $alpha, $1: simulator"
    "$sim" --trace "$2" --policy vtc --models "$models" --mux "$1" \
        --kv-head-blocks "$pool" --out "$3.sim.results" > "$3.sim.json" \
        2> "$3.sim.notes"
}

# the simulator's figures of a run: tokens/s all (each model's), SLO
simulated() {   # pre
    [ "$backend" = sim ] || { printf -- '-'; return 0; }
    perl -MJSON::PP -e 'local $/; my $j = decode_json(<STDIN>);
        my %m = map { $_->{model} => $_ } @{ $j->{models} };
        printf "%.0f (%s), %.1f%%", $j->{all}{tokens_per_s},
            join(" / ", map { sprintf "%.0f", $m{$_}{tokens_per_s} }
                        qw(m0 m1 m2)),
            100 * $j->{all}{slo_attainment}' < "$1.sim.json"
}

start_gateway() {   # mode pre rates...
    local mode=$1 pre=$2 i args=()

    shift 2
    for (( i = 0; i < 3; i++ )); do
        (( i == 0 )) || args+=(--shm "$shm-$i")
        args+=(--model "$out/m$i.gguf" --model-rate "${1:-1}")
        shift || true
    done
    if [ "$backend" = sim ]; then
        args+=(--step-model "$step" --speedup "$speedup" --max-batch 256
               --step-tokens 4096)
    else
        args+=(--max-batch 64 --step-tokens 1024)
    fi
    run_engine "$pre" 0 --backend "$backend" --kv-head-blocks "$pool" \
        --max-seqs 1024 --mux "$mode" "${args[@]}"
    write_nginx_conf "$pre" \
"    fairgate_zone zone=mux:64m policy=vtc;
    fairgate_engine e0 shm=$shm model=$out/m0.gguf id=m0;
    fairgate_engine e1 shm=$shm-1 model=$out/m1.gguf id=m1;
    fairgate_engine e2 shm=$shm-2 model=$out/m2.gguf id=m2;" \
"            # the simulator's queue: unbounded, no timeout
            fairgate zone=mux queue=100000 timeout=3600s;
            fairgate_identity user=\$http_x_user;
            fairgate_engine_pass;"
    start_nginx "$pre" 3
}

table=$out/table.md
{
    printf '| alpha | mode | gateway: tokens/s (m0 / m1 / m2) | simulator: '
    printf 'the same, SLO attainment | gateway ok / timeout / error |\n'
    printf '|---|---|---|---|---|\n'
} > "$table"

for alpha in "${alphas[@]}"; do
    trace=$out/$alpha.trace
    "$sim" gen --suite multi-model --models-n 3 --alpha "$alpha" \
        --seed "$seed" --rate-scale "$rate" --duration "$duration" \
        --out "$trace"
    scale_lengths "$lens" "$trace"
    gateway_words "$words" "$trace" "$out/$alpha.gw.trace"
    read -r -a r <<< "$(rates "$trace")"

    for mode in "${modes[@]}"; do
        pre=$out/$alpha.$mode

        simulate "$mode" "$trace" "$pre"

        say "alpha $alpha, $mode: gateway (time scale $ts)"
        start_gateway "$mode" "$pre" "${r[@]}"
        gateway_replay "$pre" "$out/$alpha.gw.trace" m0 \
            "alpha $alpha, $mode" --time-scale "$ts" \
            --max-connections 8192 --request-timeout 600 \
            --max-seconds "$max_s"

        printf '| %s | %s | %s | %s | %s |\n' "$alpha" "$mode" \
            "$(served "$pre.gw.results" "$ts")" \
            "$(simulated "$pre")" \
            "$(count ok "$pre.gw.results") / $(count timeout "$pre.gw.results") / $(count error "$pre.gw.results")" \
            | tee -a "$table"
    done
done

say "table: $table"
