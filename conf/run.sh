#!/usr/bin/env bash
# `make run [PORT=8080]`: the gateway in local mode, in the foreground.
#
# Starts fairgate-engine (cpu backend) on a model and nginx with a copy of
# conf/fairgate.conf (build/fairgate-run-PORT.conf: the port and the model
# put in, since nginx's configuration has no environment variables) on
# 127.0.0.1:PORT.  The engine is restarted whenever it dies, nginx serving
# on (conf/supervise.sh, which runs both); Ctrl-C stops both and leaves no
# segment behind.
#
# The model: $FAIRGATE_MODEL when set; else ../shared/models/stories260K.gguf
# when present; else stories260K.gguf downloaded into build/models/ and
# checked against its sha256; failing all, the sim backend on a generated
# model file (synthetic tokens, but the whole path runs).
#
# Environment: FAIRGATE_PORT (make's PORT), FAIRGATE_MODEL, FAIRGATE_NGINX.

set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD

say() { printf 'make run: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

port=${FAIRGATE_PORT:-8080}
nginx=${FAIRGATE_NGINX:-/usr/sbin/nginx}
# the programs: build/'s, or FAIRGATE_BUILD's (make test-asan's build/asan)
bin=${FAIRGATE_BUILD:-build}
engine=$bin/fairgate-engine
module=$bin/ngx_http_fairgate_module.so
conf=build/fairgate-run-$port.conf
engine_log=build/fairgate-engine-$port.log
shm=/fairgate-run-$port

stories_sha=270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d
stories_urls=(
    https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf
    https://huggingface.co/ggml-org/models-moved/resolve/main/tinyllamas/stories260K.gguf
)

[[ $port =~ ^[0-9]+$ ]] && (( port >= 1 && port <= 65535 )) \
    || die "PORT=\"$port\": expected a port number from 1 to 65535"

for f in "$engine" "$module"; do
    [ -f "$f" ] || die "$f is missing: run make first"
done
[ -x "$nginx" ] || die "$nginx not found: make run installs nginx (conf/deps.sh), or set FAIRGATE_NGINX"

# the port: nginx would only say "Address already in use" in its log
if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
    who=$(ss -Hltnp "sport = :$port" 2> /dev/null | grep -o 'users:.*' | head -1 || true)
    die "port $port on 127.0.0.1 is taken by another process${who:+ ($who)};" \
        "stop it or choose another port: make run PORT=$((port == 65535 ? 8081 : port + 1))"
fi


# the model

sha_ok() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$stories_sha" ]; }

download_stories() {
    local out=build/models/stories260K.gguf
    mkdir -p build/models

    if [ -f "$out" ] && sha_ok "$out"; then
        model=$out
        return 0
    fi

    command -v curl > /dev/null || { say "curl is not installed"; return 1; }

    for url in "${stories_urls[@]}"; do
        say "downloading stories260K.gguf (1.2 MB) from $url"
        rm -f "$out.part"
        if ! curl -fsSL --connect-timeout 10 --max-time 120 \
                -o "$out.part" "$url"; then
            say "  download failed"
            continue
        fi
        if ! sha_ok "$out.part"; then
            say "  the file's sha256 is not $stories_sha: not used"
            continue
        fi
        mv "$out.part" "$out"
        model=$out
        return 0
    done

    rm -f "$out.part"
    return 1
}

backend=cpu
if [ -n "${FAIRGATE_MODEL:-}" ]; then
    [ -f "$FAIRGATE_MODEL" ] && [ -r "$FAIRGATE_MODEL" ] \
        || die "FAIRGATE_MODEL=$FAIRGATE_MODEL: no readable file there"
    model=$FAIRGATE_MODEL
elif [ -r ../shared/models/stories260K.gguf ]; then
    model=../shared/models/stories260K.gguf
elif ! download_stories; then
    say "no model: FAIRGATE_MODEL is not set, ../shared/models/stories260K.gguf"
    say "is not there, and stories260K.gguf could not be downloaded."
    say "Starting the SIMULATED backend instead, on a generated model file"
    say "(stories260K's shape, a byte-level tokenizer): its tokens are"
    say "synthetic printable bytes at a simulated GPU's pace; the API, the"
    say "fair queue and the engine protocol run as they would on a real model."
    say "For real text: FAIRGATE_MODEL=/path/to/model.gguf make run"
    backend=sim
    model=build/models/generated.gguf
    mkdir -p build/models
    [ -f "$model" ] || "$bin"/fairgate-gguf-gen -o "$model" --name generated > /dev/null \
        || die "could not generate $model"
fi

model=$(realpath "$model")
id=$(basename "$model")
id=${id%.gguf}

# the configuration takes the path as one quoted token
case $model$id in
    *'"'* | *'\'* | *$'\n'* | *';'* | *'{'* | *'}'* | *'$'*)
        die "model path \"$model\": quotes, backslashes, ;, {, }, \$ and newlines" \
            "are not supported in it; link the file from a plainer path" ;;
esac


# the configuration: conf/fairgate.conf with the port, segment and model

user_line=
group_args=()
if [ "$(id -u)" -eq 0 ]; then
    # nginx's workers run as nobody: the segment must be theirs to attach
    group=$(id -gn nobody 2> /dev/null) || die "running as root, but there is no user nobody for nginx's workers"
    user_line="user nobody $group;"
    group_args=(--shm-group "$group")
fi

mkdir -p build
sed -e "s|listen 127\.0\.0\.1:8080;|listen 127.0.0.1:$port;|" \
    -e "s|shm=/fairgate |shm=$shm |" \
    -e "s|model=\.\./shared/models/stories260K\.gguf id=stories260K;|\"model=$model\" \"id=$id\";|" \
    -e "s|^pid build/fairgate-run\.pid;|pid build/fairgate-run-$port.pid;|" \
    -e "s|^daemon off;|&\n$user_line|" \
    -e "s|^load_module build/ngx_http_fairgate_module\.so;|load_module $module;|" \
    conf/fairgate.conf > "$conf.tmp"

for want in "listen 127.0.0.1:$port;" "pid build/fairgate-run-$port.pid;" "shm=$shm " "\"model=$model\""; do
    grep -qF "$want" "$conf.tmp" \
        || die "conf/fairgate.conf changed shape: could not put \"$want\" in it"
done
mv "$conf.tmp" "$conf"


nginx_cmd=("$nginx" -p "$root/" -e stderr -c "$root/$conf")

if ! out=$("${nginx_cmd[@]}" -t 2>&1); then
    printf '%s\n' "$out" >&2
    if grep -q 'unknown directive "fairgate_engine' <<< "$out"; then
        die "this build of the fairgate module has no local mode yet" \
            "(fairgate_engine, issue 5): nginx cannot serve $conf"
    fi
    die "nginx refused $conf (above)"
fi


# the engine, then nginx; the engine supervised (conf/supervise.sh)

engine_cmd=("$engine" --backend "$backend" --model "$model" --shm "$shm"
            "${group_args[@]}")

. conf/supervise.sh

trap cleanup EXIT
trap 'exit 0' INT     # Ctrl-C: the way to stop it, not a failure
trap 'exit 143' TERM
trap 'exit 129' HUP   # the terminal closed

engine_first
nginx_start

url=http://127.0.0.1:$port
cat >&2 << EOF

fairgate serves the OpenAI API at $url/v1/ (model "$id", $backend backend).
Try:

    curl -N $url/v1/chat/completions -H 'Content-Type: application/json' \\
         -d '{"model": "$id", "messages": [{"role": "user", "content": "Tell me a story"}], "stream": true}'
    curl -s $url/fairgate/status

Ctrl-C stops it.

EOF

supervise
