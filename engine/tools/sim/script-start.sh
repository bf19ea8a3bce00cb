# The start the scripts of engine/tools share, sourced first thing (the
# reports here, and fairgate-load's suites and reports, which stand above
# the simulator):
#
#     . "$(dirname "$0")/../sim/script-start.sh"
#
# Strict mode; top, the checkout's root (the script's folder two below);
# say and die, each line prefixed with the script's name; sim and
# profile, the simulator built and the A10G cost profile
# (FAIRGATE_PROFILE); need_built FILE..., need_profile, json_figures PERL
# and sim_figures for the reports.

set -euo pipefail

top=$(cd "$(dirname "$0")/../../.." && pwd)
sim=$top/build/fairgate-sim
profile=${FAIRGATE_PROFILE:-$top/../shared/data/vtc-a10g-llama7b-cost-profile.json}

fg_script=${0##*/}
fg_script=${fg_script%.sh}

say() { printf '%s: %s\n' "$fg_script" "$*" >&2; }
die() { say "$*"; exit 1; }

need_built() {   # file...: each executable, or "build it first"
    local f

    for f in "$@"; do
        [ -x "$f" ] || { echo "build it first: make" >&2; exit 1; }
    done
}

# the profile read, unless FAIRGATE_ENGINE names another step model
need_profile() {
    [ -n "${FAIRGATE_ENGINE:-}" ] || [ -r "$profile" ] \
        || { echo "no cost profile at $profile" >&2; exit 1; }
}

json_figures() {   # perl: a run's JSON on stdin, decoded as $m, then PERL
    perl -MJSON::PP -e '
        local $/;
        my $m = decode_json(<STDIN>);
'"$1"
}

# a run of the simulator, its results, JSON and notes in $out/NAME.jsonl,
# .json and .err; then a line: WHAT and the run's figures (the script's
# figures, from its JSON)
sim_figures() {   # what name args...
    local what=$1 name=$2

    shift 2
    "$sim" "$@" --out "$out/$name.jsonl" > "$out/$name.json" \
        2> "$out/$name.err"
    echo "$what $(figures < "$out/$name.json")"
}
