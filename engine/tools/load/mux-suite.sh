#!/usr/bin/env bash
# Several models in one engine through the real gateway: nginx with the
# fairgate module in local mode, one fairgate-engine process serving
# several models of different shapes on a segment each, one zone in
# front; fairgate-load replays the multi-model suite (per-model rates by
# a power law of ALPHA), each request asking for its model.  The engine
# shares its KV pool and its device by --mux spatial, temporal or
# muxserve.
#
# BACKEND=sim (the default): the simulator's models (MODELS, default
# engine/tools/sim/models-4.json: 7B-, 13B-, 3B- and 1B-like, each its own step
# model) as generated GGUFs of their layers and KV heads (stories260K's
# tokenizer) on the sim backend, the trace's clock compressed by
# TIME_SCALE; the simulator runs each mode beside it on the same trace
# and models.
# BACKEND=cpu: real computation on the cpu backend in real time:
# stories260K and two generated models of other shapes, the suite's
# lengths scaled by LEN_SCALE (0.25: stories260K's context is 512) over
# DURATION (60) seconds; no simulator beside it (its step model is a
# GPU's).
#
#     engine/tools/load/mux-suite.sh [OUTDIR]  (default: build/mux-suite)
#
# Environment: ALPHAS (1.3 2.1), LOAD (the suite's --rate-scale: 0.3;
# cpu 2), MODES (spatial temporal muxserve), HEAD_BLOCKS (the pool:
# 40,000 tokens of the largest model, as engine/tools/sim/mux-report.sh; cpu
# 12,000), TIME_SCALE (0.1; cpu 1), SEED (1), WORDS (0.52), PORT (18520),
# MAX_TRACE_S (2400), FAIRGATE_NGINX.  About two minutes an alpha (cpu:
# four in all).  Writes OUTDIR/table.md (docs/multi-model.md records it).
# Loopback only; nginx, the engine and its segments are removed on exit,
# whatever the exit.

. "$(dirname "$0")/../sim/script-start.sh"
cd "$top"

out=$(realpath -m "${1:-build/mux-suite}")
backend=${BACKEND:-sim}
alphas=(${ALPHAS:-1.3 2.1})
modes=(${MODES:-spatial temporal muxserve})
seed=${SEED:-1}
case $backend in
sim)
    rate=${LOAD:-0.3}
    ts=${TIME_SCALE:-0.1}
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

. engine/tools/load/gateway-run.sh
gateway_start "${MAX_TRACE_S:-2400}" mux

gateway_init sim

# the shapes: name layers heads kv-heads embedding feed-forward step-model
# [stories: stories260K itself, its real weights].  sim: the simulator's
# models file, heads as KV heads (a head of 4 dimensions: the sim backend
# reads the shape, not the weights); cpu: three of their own
if [ "$backend" = sim ]; then
    mapfile -t shapes < <(perl -MJSON::PP -e 'local $/;
        for my $m (@{ decode_json(<STDIN>) }) {
            printf "%s %d %d %d %d 128 %s\n", $m->{name}, $m->{layers},
                $m->{kv_heads}, $m->{kv_heads}, 4 * $m->{kv_heads},
                $m->{engine};
        }' < "${MODELS:-engine/tools/sim/models-4.json}")
else
    shapes=("m0 8 8 8 128 344 -" "m1 5 8 4 64 172 - stories"
            "m2 3 4 2 48 128 -")
fi
names=()
models=$out/models.json
most=0

{
    printf '['
    sep=
    for s in "${shapes[@]}"; do
        read -r name layers heads kv embd ff step real <<< "$s"
        names+=("$name")
        f=$out/$name.gguf
        [ -z "${real:-}" ] || cp "$stories" "$f"
        [ -f "$f" ] || build/fairgate-gguf-gen -o "$f" --layers "$layers" \
            --heads "$heads" --kv-heads "$kv" --embd "$embd" --ff "$ff" \
            --ctx 4096 --tokenizer "$stories" --name "$name" > /dev/null \
            || die "could not generate $f"
        (( 2 * layers * kv > most )) && most=$(( 2 * layers * kv ))
        printf '%s\n  {"name": "%s", "layers": %d, "kv_heads": %d, ' \
            "$sep" "$name" "$layers" "$kv"
        printf '"head_dim": %d, "engine": "%s"}' $(( embd / heads )) \
            "${step/#-/gpu}"
        sep=,
    done
    printf '\n]\n'
} > "$models"
n=${#names[@]}
pool=${pool:-${HEAD_BLOCKS:-$(( 40000 / 16 * most ))}}

# the models' rates in a trace: requests per second of each, in order
rates() {   # trace
    perl -MJSON::PP -ne '
        BEGIN { @names = splice @ARGV, 1 }
        my $r = decode_json($_);
        $n{$r->{model}}++;
        $t = $r->{t} if $r->{t} > $t;
        END { printf "%g ", $n{$_} / ($t || 1) for @names }
    ' "$1" "${names[@]}"
}

# the gateway's results on the trace's clock (times over the time scale),
# and the simulator's figures of them (analyze --models: the same counts,
# the same SLO, one copy)
gateway_figures() {   # pre
    perl -MJSON::PP -ne '
        BEGIN { $ts = shift; $J = JSON::PP->new->canonical }
        my $r = decode_json($_);
        for my $k (qw(arrival scheduled first_token finish)) {
            $r->{$k} /= $ts if defined $r->{$k};
        }
        print $J->encode($r), "\n";
    ' "$ts" "$1.gw.results" > "$1.gw.clock.results"
    "$sim" analyze --results "$1.gw.clock.results" --models "$models" \
        > "$1.gw.json"
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

# a run's figures: tokens/s all (each model's); sim: the SLO attainment
# and the least-served model's share (cpu: the SLO is a GPU's, not shown)
figures() {   # json-file
    [ -f "$1" ] || { printf -- '-'; return 0; }
    perl -MJSON::PP -e 'local $/; my $j = decode_json(<STDIN>);
        my ($slo, @names) = @ARGV;
        my %m = map { $_->{model} => $_ } @{ $j->{models} };
        my ($least) = sort { $a <=> $b }
                      map { $m{$_}{served_share} } @names;
        printf "%.0f (%s)", $j->{all}{tokens_per_s},
            join(" / ", map { sprintf "%.0f", $m{$_}{tokens_per_s} }
                        @names);
        printf ", %.1f%%, %.2f", 100 * $j->{all}{slo_attainment}, $least
            if $slo;' "$([ "$backend" = sim ] && echo 1 || echo 0)" \
        "${names[@]}" < "$1"
}

start_gateway() {   # mode pre rates...
    local mode=$1 pre=$2 i args=() conf=

    shift 2
    for (( i = 0; i < n; i++ )); do
        read -r _ _ _ _ _ _ step _ <<< "${shapes[$i]}"
        (( i == 0 )) || args+=(--shm "$(engine_shm "$i")")
        args+=(--model "$out/${names[$i]}.gguf" --model-rate "${1:-1}")
        [ "$backend" = cpu ] || args+=(--step-model "$step")
        conf+="    fairgate_engine e$i shm=$(engine_shm "$i")"
        conf+=" model=$out/${names[$i]}.gguf id=${names[$i]};"$'\n'
        shift || true
    done
    if [ "$backend" = sim ]; then
        args+=(--speedup "$speedup" --max-batch 256 --step-tokens 4096)
    else
        args+=(--max-batch 64 --step-tokens 1024)
    fi
    run_engine "$pre" 0 --backend "$backend" --kv-head-blocks "$pool" \
        --max-seqs 1024 --mux "$mode" "${args[@]}"
    write_suite_conf "$pre" mux:64m policy=vtc "$conf" \
        "            fairgate_engine_pass;"
    start_nginx "$pre" 3
}

table=$out/table.md
{
    hdr=$(printf '%s / ' "${names[@]}")
    printf '| alpha | mode | gateway: tokens/s (%s), SLO, least ' "${hdr% / }"
    printf 'share | simulator: the same | gateway ok / timeout / error |\n'
    printf '|---|---|---|---|---|\n'
} > "$table"

for alpha in "${alphas[@]}"; do
    trace=$out/$alpha.trace
    "$sim" gen --suite multi-model --models-n "$n" --alpha "$alpha" \
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

        gateway_figures "$pre"
        printf '| %s | %s | %s | %s | %s |\n' "$alpha" "$mode" \
            "$(figures "$pre.gw.json")" "$(figures "$pre.sim.json")" \
            "$(count ok "$pre.gw.results") / $(count timeout "$pre.gw.results") / $(count error "$pre.gw.results")" \
            | tee -a "$table"
    done
done

say "table: $table"
