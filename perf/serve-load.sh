#!/bin/sh
# tessera serve under load, against the CLI on the same sentences, in one run:
#
#   1. throughput: the CLI translating all the sentences with --batch B
#      (decoding time: the run less a run on empty input, i.e. the load),
#      then the server (same --workers/--threads) answering them as
#      single-sentence requests from 1, 8 and 64 concurrent clients
#      (perf/tessera-serve-load): sentences/s, p50/p90/p99 latency, and the
#      server's throughput over the CLI's;
#   2. latency: a lone call's translate time (each sentence translated alone
#      by the library on a runtime of WORKERS x THREADS threads, model load
#      excluded: perf/tessera-serve-load --direct) against the server's, one
#      client at a time, the server run as --workers 1 --threads WORKERS x
#      THREADS (so both use the same threads), p50 and p99, rounds alternated;
#      (-l 0 leaves this part out: throughput alone);
#   3. abuse (-a SECONDS): 64 clients plus a client sending malformed
#      requests for SECONDS; every good request must be answered and every
#      bad one refused; the server's peak RSS (VmHWM) is reported and it must
#      exit 0 on SIGTERM.
#
#   perf/serve-load.sh -m MODEL [-w WORKERS] [-k THREADS] [-b BATCH] [-N SENTENCES]
#                      [-L MAX_LEN] [-n REQUESTS] [-c "1 8 64"] [-a SECONDS]
#                      [-T TYPE] [-r ROUNDS] [-t TESSERA] [-l 0]
#
# Defaults: -w 2 -k 1 -b 16 -N 200 -L 16 -n 400 -c "1 8 64" -T f32 -r 3, no
# abuse run. Sentences: 4 to 11 seeded random ids each. MODEL e.g.
# Transformer-base from perf/make-bench-model (its weights never choose EOS:
# every sentence decodes MAX_LEN tokens, so sentences cost about the same).
set -eu

tessera=./tessera
load=perf/tessera-serve-load
model=
workers=2
threads=1
batch=16
sentences=200
max_len=16
requests=400
clients="1 8 64"
abuse=0
type=f32
rounds=3
latency=1
while [ $# -gt 0 ]; do
    case $1 in
    -m) model=$2; shift 2 ;;
    -w) workers=$2; shift 2 ;;
    -k) threads=$2; shift 2 ;;
    -b) batch=$2; shift 2 ;;
    -N) sentences=$2; shift 2 ;;
    -L) max_len=$2; shift 2 ;;
    -n) requests=$2; shift 2 ;;
    -c) clients=$2; shift 2 ;;
    -a) abuse=$2; shift 2 ;;
    -T) type=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -t) tessera=$2; shift 2 ;;
    -l) latency=$2; shift 2 ;;
    -h | --help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "serve-load.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$model" ] || { echo "serve-load.sh: -m MODEL is required (see --help)" >&2; exit 2; }
for p in "$tessera" "$load"; do
    [ -x "$p" ] || { echo "serve-load.sh: '$p' is missing (make; -t TESSERA)" >&2; exit 2; }
done
prog=serve-load.sh
# shellcheck source=perf/short-sentences.sh
. "$(dirname "$0")/short-sentences.sh"
check_model "$model"

work=$(mktemp -d)
server_pid=
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
write_sentences "$sentences" "$vocab" "$work/in"
: >"$work/empty"

# Median seconds of the CLI's decoding (load subtracted) over the rounds.
cli_decode() { # batch workers threads
    i=0
    : >"$work/t.all"
    : >"$work/t.load"
    while [ "$i" -lt "$rounds" ]; do
        for f in empty in; do
            t0=$(now)
            "$tessera" translate -m "$model" --compute-type "$type" --max-len "$max_len" \
                --batch "$1" --workers "$2" --threads "$3" <"$work/$f" >/dev/null
            t1=$(now)
            [ "$f" = in ] && out=t.all || out=t.load
            echo "$t0 $t1" | awk '{ print $2 - $1 }' >>"$work/$out"
        done
        i=$((i + 1))
    done
    echo "$(median <"$work/t.all") $(median <"$work/t.load")" | awk '{ printf "%.4f", $1 - $2 }'
}

start_server() { # workers threads
    "$tessera" serve -m "$model" --port 0 --compute-type "$type" --workers "$1" --threads "$2" \
        >"$work/server.out" 2>&1 &
    server_pid=$!
    i=0
    until grep -q 'ready' "$work/server.out"; do
        i=$((i + 1))
        if [ "$i" -gt 600 ] || ! kill -0 "$server_pid" 2>/dev/null; then
            cat "$work/server.out" >&2
            echo "serve-load.sh: the server did not start" >&2
            exit 1
        fi
        sleep 0.1
    done
    port=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9]*\)$/\1/p' "$work/server.out")
}

stop_server() {
    hwm=$(awk '/VmHWM/ { print $2 / 1024 " MiB" }' "/proc/$server_pid/status" 2>/dev/null || echo "?")
    kill -TERM "$server_pid"
    status=0
    wait "$server_pid" || status=$?
    server_pid=
    echo "server: peak RSS $hwm, exit status $status on SIGTERM"
    [ "$status" = 0 ] || { cat "$work/server.out" >&2; exit 1; }
}

echo "# $(basename "$model"), $type, $sentences sentences of 4-11 ids, --max-len $max_len, $rounds rounds"
echo "# $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), $(nproc) CPUs"

echo "## throughput: CLI --batch $batch --workers $workers --threads $threads against the server"
cli=$(cli_decode "$batch" "$workers" "$threads")
cli_rate=$(echo "$sentences $cli" | awk '{ printf "%.1f", $1 / $2 }')
echo "cli: batch=$batch decode_s=$cli sentences_per_s=$cli_rate"
start_server "$workers" "$threads"
"$load" -p "$port" -i "$work/in" -c 4 -n 50 -L "$max_len" >/dev/null # warm up
for c in $clients; do
    line=$("$load" -p "$port" -i "$work/in" -c "$c" -n "$requests" -L "$max_len")
    rate=$(echo "$line" | sed 's/.*sentences_per_s=\([0-9.]*\).*/\1/')
    echo "server: $line of_cli=$(echo "$rate $cli_rate" | awk '{ printf "%.2f", $1 / $2 }')"
done
stop_server

[ "$latency" = 0 ] || {
echo "## latency: lone translate calls (library, $((workers * threads)) threads, no load) against the server (--workers 1 --threads $((workers * threads))) at 1 client"
start_server 1 $((workers * threads))
"$load" -p "$port" -i "$work/in" -c 1 -n 20 -L "$max_len" >/dev/null
: >"$work/lat.direct"
: >"$work/lat.server"
i=0
while [ "$i" -lt "$rounds" ]; do
    "$load" --direct "$model" -k $((workers * threads)) -T "$type" -i "$work/in" -n "$sentences" \
        -L "$max_len" >>"$work/lat.direct"
    "$load" -p "$port" -i "$work/in" -c 1 -n "$sentences" -L "$max_len" >>"$work/lat.server"
    i=$((i + 1))
done
field() { sed "s/.*$1=\([0-9.]*\).*/\1/" "$2" | median; }
for v in direct server; do
    echo "$v: p50_ms=$(field p50_ms "$work/lat.$v") p99_ms=$(field p99_ms "$work/lat.$v") (median of $rounds rounds of $sentences requests)"
done
echo "server/direct: p50 $(echo "$(field p50_ms "$work/lat.server") $(field p50_ms "$work/lat.direct")" | awk '{ printf "%.2f", $1 / $2 }'), p99 $(echo "$(field p99_ms "$work/lat.server") $(field p99_ms "$work/lat.direct")" | awk '{ printf "%.2f", $1 / $2 }')"
stop_server
}

if [ "$abuse" -gt 0 ]; then
    echo "## abuse: 64 clients and a stream of malformed requests for $abuse s"
    start_server "$workers" "$threads"
    "$load" -p "$port" -i "$work/in" -c 64 -t "$abuse" -L "$max_len" --bad || {
        echo "serve-load.sh: requests lost or bad requests not refused" >&2
        stop_server
        exit 1
    }
    stop_server
fi
