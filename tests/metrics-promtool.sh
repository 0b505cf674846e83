#!/bin/sh
# make check: GET /metrics of a live `tessera serve`, after requests that
# answer 200, 400, 404 and 405, passes `promtool check metrics` (Debian's
# prometheus package): the exposition format and Prometheus' naming rules
# (issue 51). It first checks a copy with a counter's _total suffix taken
# out, and fails if promtool passes that: a checker that cannot fail proves
# nothing. SKIP (named) without promtool or python3 (the HTTP client here).
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
tessera=$build/tests/command/tessera
runner=${TESSERA_TEST_RUNNER:-}
model=$srcdir/models/numbers-en-de
python=${TESSERA_TEST_PYTHON:-/usr/bin/python3}

if ! command -v promtool >/dev/null 2>&1; then
    echo "SKIP: promtool is not installed (apt-get install prometheus)"
    exit 77
fi
if ! [ -x "$python" ]; then
    echo "SKIP: $python is not installed (the HTTP client of this test)"
    exit 77
fi
scratch=$(mktemp -d) || exit 2
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$scratch"
}
trap cleanup EXIT

# shellcheck disable=SC2086 # the runner is words
$runner "$tessera" serve -m "$model" --port 0 --workers 1 --threads 1 >"$scratch/log" 2>&1 &
pid=$!
port=
for _ in $(seq 1 600); do
    grep -q 'ready' "$scratch/log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
port=$(sed -n 's/.*listening on http:\/\/.*:\([0-9][0-9]*\)$/\1/p' "$scratch/log")
if ! grep -q 'ready' "$scratch/log" || [ -z "$port" ]; then
    echo "FAIL: tessera serve did not get ready:"
    cat "$scratch/log"
    exit 1
fi

# METHOD PATH [BODY]: prints the status; the answer's body goes to $scratch/body.
call() {
    "$python" - "$port" "$scratch/body" "$@" <<'PY'
import sys, urllib.error, urllib.request
port, out, method, path = sys.argv[1:5]
body = sys.argv[5].encode() if len(sys.argv) > 5 else None
req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), data=body, method=method)
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        status, text = r.status, r.read()
except urllib.error.HTTPError as e:
    status, text = e.code, e.read()
with open(out, "wb") as f:
    f.write(text)
print(status)
PY
}

# Each request and the status it must get.
check_status() {
    want=$1
    shift
    got=$(call "$@" 2>"$scratch/error") || {
        echo "FAIL: $1 $2: no answer: $(tail -1 "$scratch/error")"
        exit 1
    }
    if [ "$got" != "$want" ]; then
        echo "FAIL: $1 $2 answered $got, not $want: $(cat "$scratch/body")"
        exit 1
    fi
}
check_status 200 POST /v1/translate '{"text": ["three hundred forty five"]}'
check_status 200 POST /v1/score '{"source": [[5, 6]], "target": [[7]]}'
check_status 400 POST /v1/translate '{"text": '
check_status 404 GET /v1/nothing
check_status 405 GET /v1/translate
check_status 200 GET /v1/health
check_status 200 GET /metrics
cp "$scratch/body" "$scratch/metrics"
if ! grep -q '^tessera_requests_total{endpoint="/v1/translate",code="200"} 1$' "$scratch/metrics"; then
    echo "FAIL: /metrics does not count the translate request:"
    cat "$scratch/metrics"
    exit 1
fi

# The checker must fail on a counter without its _total suffix.
sed 's/tessera_requests_total/tessera_requests/g' "$scratch/metrics" >"$scratch/broken"
if promtool check metrics <"$scratch/broken" >/dev/null 2>&1; then
    echo "FAIL: promtool passed a counter without _total"
    exit 1
fi
if ! promtool check metrics <"$scratch/metrics" >"$scratch/promtool" 2>&1; then
    echo "FAIL: promtool check metrics on GET /metrics:"
    cat "$scratch/promtool"
    exit 1
fi
kill "$pid"
wait "$pid"
status=$?
pid=
if [ "$status" != 0 ]; then
    echo "FAIL: tessera serve exited $status on SIGTERM:"
    cat "$scratch/log"
    exit 1
fi
echo "PASS: GET /metrics ($(grep -c -v '^#' "$scratch/metrics") samples) passes promtool check metrics"
