#!/bin/sh
# make check-full (or by hand, from a build directory: sh SRCDIR/tests/balancer.sh): Debian's
# HAProxy on loopback in front of two `tessera serve` replicas, health-checked on GET
# /v1/health, with the README's haproxy.cfg (the first ```haproxy block of README.md, its
# ports 8000, 8081 and 8082 replaced by free ones). 32 clients send translations for
# BALANCER_SECONDS (60) while one replica is restarted (SIGTERM, its drain, started again 5 s
# later) and then the other: every request must be answered 200 with what `tessera translate`
# prints for its sentence, and both replicas must exit 0 on SIGTERM (issue 51). It prints
# the counts: requests, failures, restarts. SKIP (named) without haproxy or python3.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
tessera=$build/tessera
[ -x "$build/tests/command/tessera" ] && tessera=$build/tests/command/tessera
model=$srcdir/models/numbers-en-de
python=${TESSERA_TEST_PYTHON:-/usr/bin/python3}
seconds=${BALANCER_SECONDS:-60}
clients=32

command -v haproxy >/dev/null 2>&1 || { echo "SKIP: haproxy is not installed (apt-get install haproxy)"; exit 77; }
[ -x "$python" ] || { echo "SKIP: $python is not installed (the clients of this test)"; exit 77; }
scratch=$(mktemp -d) || exit 2
pids=
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    rm -rf "$scratch"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    for f in "$scratch"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
    exit 1
}

# Three free ports: the balancer's, then the replicas'.
# shellcheck disable=SC2046 # three words
set -- $("$python" -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
front=$1 port_a=$2 port_b=$3

# The README's configuration, on those ports.
awk '/^```haproxy$/ { on = 1; next } on && /^```$/ { exit } on' "$srcdir/README.md" |
    sed -e "s/:8000\b/:$front/" -e "s/:8081\b/:$port_a/" -e "s/:8082\b/:$port_b/" \
        >"$scratch/haproxy.cfg"
grep -q "$port_b" "$scratch/haproxy.cfg" || fail "README.md has no \`\`\`haproxy block with ports 8000, 8081, 8082"

# The sentences and what the command prints for each.
"$python" - "$scratch/sentences" <<'PY'
import sys
units = "one two three four five six seven eight nine".split()
tens = "twenty thirty forty fifty sixty seventy eighty ninety".split()
lines = []
for i in range(200):
    t, u, h = tens[i % 8], units[(i // 8) % 9], units[(i * 7) % 9]
    lines.append(["%s %s" % (t, u), "%s hundred %s %s" % (h, t, u), "%s" % u][i % 3])
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
"$tessera" translate -m "$model" --text <"$scratch/sentences" >"$scratch/expected" ||
    fail "tessera translate failed"

# start NAME PORT: a replica, in the background, until it says it is ready.
start() {
    "$tessera" serve -m "$model" --port "$2" --workers 1 --threads 1 --drain-timeout 20 \
        >>"$scratch/$1.log" 2>&1 &
    eval "pid_$1=$!"
    pids="$pids $!"
    for _ in $(seq 1 300); do
        [ "$(grep -c 'ready' "$scratch/$1.log")" -ge "$3" ] && return 0
        sleep 0.1
    done
    fail "replica $1 did not get ready"
}
# restart NAME PORT N: SIGTERM, its exit status 0, started again DOWN seconds later (a
# supervisor's restart delay, a large model's load: the balancer must route around it),
# until its Nth ready line.
down=5
restart() {
    eval "p=\$pid_$1"
    kill -TERM "$p"
    wait "$p"
    status=$?
    [ "$status" = 0 ] || fail "replica $1 exited $status on SIGTERM"
    sleep "$down"
    start "$1" "$2" "$3"
    restarts=$((restarts + 1))
}
restarts=0
start a "$port_a" 1
start b "$port_b" 1
haproxy -db -f "$scratch/haproxy.cfg" >"$scratch/haproxy.log" 2>&1 &
pids="$pids $!"
sleep 2 # the health checks' rise

"$python" - "$front" "$clients" "$seconds" "$scratch/sentences" "$scratch/expected" \
    >"$scratch/clients.out" 2>"$scratch/clients.log" <<'PY' &
import http.client, json, sys, threading, time
port, clients, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
sentences = open(sys.argv[4]).read().splitlines()
expected = open(sys.argv[5]).read().splitlines()
lock = threading.Lock()
counts = {"requests": 0, "failures": 0}
first = []
end = time.monotonic() + seconds

def client(k):
    conn, i = None, k
    while time.monotonic() < end:
        i = (i + 7) % len(sentences)
        problem = None
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("POST", "/v1/translate", json.dumps({"text": [sentences[i]]}),
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                problem = "status %d: %s" % (r.status, body[:200])
            else:
                got = json.loads(body)["translations"][0]["text"]
                if got != expected[i]:
                    problem = "%r -> %r, the command says %r" % (sentences[i], got, expected[i])
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except Exception as e:  # noqa: BLE001 - any failure a client sees counts
            problem = "%s: %s" % (type(e).__name__, e)
            conn = None
        with lock:
            counts["requests"] += 1
            if problem:
                counts["failures"] += 1
                if len(first) < 5:
                    first.append(problem)

threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(counts["requests"], counts["failures"])
for p in first:
    print("  " + p, file=sys.stderr)
PY
load=$!

# One replica restarted at a quarter of the run, the other at a half.
sleep "$((seconds / 4))"
restart a "$port_a" 2
sleep "$((seconds / 4))"
restart b "$port_b" 2
wait "$load" || fail "the clients failed"
# shellcheck disable=SC2046 # two words
set -- $(cat "$scratch/clients.out")
requests=$1 failures=$2
echo "balancer: $requests requests from $clients clients in $seconds s, $failures failed, $restarts restarts (HAProxy $(haproxy -v | head -1 | awk '{print $3}'))"
[ "$failures" = 0 ] || fail "$failures of $requests requests failed: $(cat "$scratch/clients.log")"
[ "$restarts" = 2 ] || fail "$restarts restarts, not 2"
[ "$requests" -gt 0 ] || fail "no request was sent"
for r in a b; do
    eval "p=\$pid_$r"
    kill -TERM "$p"
    wait "$p"
    status=$?
    [ "$status" = 0 ] || fail "replica $r exited $status on SIGTERM"
done
echo "PASS: HAProxy over two replicas, each restarted once under load: every answer the command's"
