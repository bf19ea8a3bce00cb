# make run's processes, sourced by conf/run.sh once it has chosen what to
# run: engine_cmd, nginx_cmd (arrays), engine_log, shm, say and die.
#
# The engine starts first, then nginx.  From then on the engine is
# supervised: when it dies, make run says how (its exit status or signal,
# the end of its log) and starts another after a backoff, 0.5 s doubling
# up to 8 s, back to 0.5 s once an engine has served 30 s (a crash now
# and then is restarted at once; one that crashes at every start is not
# restarted in a tight loop).  nginx keeps serving meanwhile: the module
# ends open requests with clean errors, answers 503 engine_unavailable
# until the new engine is there, and its workers attach to it by
# themselves (docs/local-mode.md, "Engine loss").
#
# nginx ending stops everything (the gateway is gone), and so does Ctrl-C,
# at any moment, a backoff or a restart included: the EXIT trap stops
# whatever runs and removes the segment.

# shellcheck shell=bash disable=SC2154   # run.sh's variables

backoff_first_ms=500
backoff_cap_ms=8000
backoff_reset_s=30

engine_pid=
engine_rc=
engine_up=               # $SECONDS when the running engine began serving
engine_log_from=0        # where its part of the log begins
nginx_pid=
delay_ms=$backoff_first_ms
restarts=0


running() {   # pid: there and no zombie (a stray waits for init to reap it)
    local stat
    { read -r stat < "/proc/$1/stat"; } 2> /dev/null || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

stop_pid() {   # pid signal: signal, wait up to 10 s, then SIGKILL
    local pid=$1 sig=$2 i
    [ -n "$pid" ] || return 0
    if ! kill "-$sig" "$pid" 2> /dev/null; then
        wait "$pid" 2> /dev/null || true
        return 0
    fi
    for (( i = 0; i < 100; i++ )); do
        running "$pid" || break
        sleep 0.1
    done
    kill -KILL "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
}

# nginx's workers outlive a master killed by SIGKILL (or by stop_pid),
# still holding the port: those in make run's own process group are ours
nginx_strays() {
    local pgid
    pgid=$(ps -o pgid= -p "$$") || return 0
    ps -e -o pid=,pgid=,comm= \
        | awk -v g="${pgid// /}" '$2 == g && $3 == "nginx" { print $1 }'
}

cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM HUP
    if [ -n "$nginx_pid$engine_pid" ]; then
        say "stopping"
    fi
    stop_pid "$nginx_pid" QUIT
    stop_pid "$engine_pid" TERM
    for pid in $(nginx_strays); do
        stop_pid "$pid" TERM
    done
    # the engine removes its segment; after a crash it would stay
    rm -f "/dev/shm/${shm#/}"
    exit "$rc"
}

how_ended() {   # status: as people say it
    local sig
    if (( $1 > 128 )) && sig=$(kill -l "$1" 2> /dev/null); then
        echo "was killed by SIG$sig"
    else
        echo "exited with status $1"
    fi
}


# the engine

engine_start() {
    # one log for all of make run's engines, each appending: the ready
    # check and the crash report read only the running one's part
    engine_log_from=$(stat -c %s "$engine_log" 2> /dev/null || echo 0)
    "${engine_cmd[@]}" >> "$engine_log" 2>&1 < /dev/null &
    engine_pid=$!
    engine_up=
}

engine_log_own() { tail -c "+$((engine_log_from + 1))" "$engine_log"; }

engine_reap() {   # the engine has ended: its status into engine_rc
    engine_rc=0
    # the redirection: bash's own "Killed" line for it would go to stderr
    wait "$engine_pid" 2> /dev/null || engine_rc=$?
}

# until the engine serves: 0; it ended: 1 (engine_rc says how); after 60 s
# it is killed and counts as ended
engine_ready() {
    local i
    for (( i = 0; i < 600; i++ )); do
        if [[ $(engine_log_own) == *serving* ]]; then
            engine_up=$SECONDS
            return 0
        fi
        if ! kill -0 "$engine_pid" 2> /dev/null; then
            engine_reap
            return 1
        fi
        nginx_check
        sleep 0.1
    done
    say "the engine (pid $engine_pid) is not serving after 60 s: killing it"
    kill -KILL "$engine_pid" 2> /dev/null || true
    engine_reap
    return 1
}

engine_first() {   # an engine that does not start is make run's failure
    say "engine: ${engine_cmd[*]}"
    say "        (its log: $engine_log)"
    : > "$engine_log"
    engine_start
    if ! engine_ready; then
        engine_pid=
        cat "$engine_log" >&2
        die "the engine did not start: it $(how_ended "$engine_rc")"
    fi
    say "$(grep -m1 'serving' "$engine_log")"
}

engine_died() {   # says how, with the end of its log; removes its segment
    local served='' tail
    [ -z "$engine_up" ] || served=" after serving $((SECONDS - engine_up)) s"
    tail=$(engine_log_own | tail -n 5)
    if [ -n "$tail" ]; then
        say "the engine (pid $engine_pid) $(how_ended "$engine_rc")$served;" \
            "the end of its log:"
        sed 's/^/    /' <<< "$tail" >&2
    else
        say "the engine (pid $engine_pid) $(how_ended "$engine_rc")$served;" \
            "it logged nothing"
    fi
    engine_pid=
    # the new engine removes a segment whose engine is gone, but takes a
    # pid reused within its 2 s heartbeat for a live engine: it would
    # refuse to start; the name is ours, its engine reaped
    rm -f "/dev/shm/${shm#/}"
}

backoff_wait() {   # the backoff's delay, watching nginx
    local ms
    for (( ms = 0; ms < delay_ms; ms += 100 )); do
        nginx_check
        sleep 0.1
    done
}

engine_restart() {   # after a backoff, a new engine, until one serves
    while :; do
        # an engine that served a while: its death starts the backoff again
        if [ -n "$engine_up" ] && (( SECONDS - engine_up >= backoff_reset_s ))
        then
            delay_ms=$backoff_first_ms
        fi
        restarts=$((restarts + 1))
        say "restarting the engine in" \
            "$((delay_ms / 1000)).$((delay_ms % 1000 / 100)) s" \
            "(restart $restarts); nginx answers 503 engine_unavailable" \
            "meanwhile"
        backoff_wait
        delay_ms=$((delay_ms * 2))
        (( delay_ms <= backoff_cap_ms )) || delay_ms=$backoff_cap_ms

        engine_start
        if engine_ready; then
            say "the engine serves again (pid $engine_pid);" \
                "nginx's workers attach to it by themselves"
            return 0
        fi
        engine_died
    done
}


# nginx

nginx_start() {
    local i rc
    "${nginx_cmd[@]}" < /dev/null &
    nginx_pid=$!
    for (( i = 0; ; i++ )); do
        (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && return 0
        if ! kill -0 "$nginx_pid" 2> /dev/null; then
            rc=0
            wait "$nginx_pid" || rc=$?
            nginx_pid=
            die "nginx did not start: it $(how_ended "$rc") (its log is above)"
        fi
        (( i < 100 )) \
            || die "nginx does not accept connections on port $port after 10 s"
        sleep 0.1
    done
}

nginx_ended() {   # status: everything stops
    nginx_pid=
    if (( $1 == 0 )); then
        say "nginx stopped; the engine stops too"
        exit 0
    fi
    die "nginx $(how_ended "$1"); the engine stops too"
}

nginx_check() {   # nginx still there, or everything stops
    local rc=0
    [ -z "$nginx_pid" ] && return 0   # not started yet
    kill -0 "$nginx_pid" 2> /dev/null && return 0
    wait "$nginx_pid" 2> /dev/null || rc=$?
    nginx_ended "$rc"
}


# until nginx ends or Ctrl-C: the engine restarted whenever it dies.
# Ctrl-C's SIGINT reaches both too, but the INT trap ends make run first.
supervise() {
    local who rc
    while :; do
        nginx_check
        if kill -0 "$engine_pid" 2> /dev/null; then
            # only builtins from the check to here: an engine ended in
            # between is still wait -n's to report
            who='' rc=0
            wait -n -p who "$engine_pid" "$nginx_pid" 2> /dev/null || rc=$?
            [ "$who" != "$nginx_pid" ] || nginx_ended "$rc"
            [ "$who" = "$engine_pid" ] || continue
            engine_rc=$rc
        else
            engine_reap
        fi
        engine_died
        engine_restart
    done
}
