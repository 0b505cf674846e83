#!/bin/sh
# make check: the README's Kubernetes Deployment (its first ```yaml block) and systemd unit
# (its first ```ini block) agree with tessera serve (issue 51): every flag they pass is one of
# `tessera serve --help`; the Deployment's readiness probe asks GET /v1/health on the port the
# server listens on, its liveness probe and containerPort are that port, and its grace period
# is longer than the preStop wait and --drain-timeout together; the unit's TimeoutStopSec is
# longer than --drain-timeout, and `systemd-analyze verify` passes the unit (its ExecStart
# pointed at this build's tessera). No cluster runs here: these are the values a cluster would
# be given. It first checks a copy whose grace period is shorter than the drain, and fails if
# that passes. SKIP (named) without python3-yaml or systemd-analyze.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
tessera=$build/tests/command/tessera
# TESSERA_TEST_RUNNER: words put before a binary of the build (qemu for a
# cross build, tests/run-set.sh).
runner=${TESSERA_TEST_RUNNER:-}
python=${TESSERA_TEST_PYTHON:-/usr/bin/python3}
readme=$srcdir/README.md

if ! "$python" -c 'import yaml' 2>/dev/null; then
    echo "SKIP: $python has no yaml (apt-get install python3-yaml)"
    exit 77
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "SKIP: systemd-analyze is not installed (apt-get install systemd)"
    exit 77
fi
scratch=$(mktemp -d) || exit 2
trap 'rm -rf "$scratch"' EXIT
binary=$(cd "$(dirname "$tessera")" && pwd)/$(basename "$tessera")
# shellcheck disable=SC2086 # the runner is words
if ! $runner "$tessera" serve --help >"$scratch/help" 2>&1; then
    grep -q "built without" "$scratch/help" && { echo "SKIP: tessera serve is not built"; exit 77; }
    echo "FAIL: tessera serve --help: $(head -1 "$scratch/help")"
    exit 1
fi

# check README: the problems, one a line (nothing when all holds); the unit it writes to
# $scratch/tessera.service.
check() {
    "$python" - "$1" "$scratch/help" "$scratch/tessera.service" "$binary" <<'PY'
import re, shlex, sys, yaml
readme, help_path, unit_path, binary = sys.argv[1:5]
text = open(readme, encoding="utf-8").read()
flags = set(re.findall(r"--[a-z][a-z0-9-]*", open(help_path).read())) | {"-m"}

def block(lang):
    m = re.search(r"^```%s\n(.*?)^```$" % lang, text, re.S | re.M)
    if not m:
        print("README.md has no ```%s block" % lang)
        sys.exit(0)
    return m.group(1)

def serve_args(args, where):
    """--port and --drain-timeout of a serve command line, every flag checked."""
    if args[:1] != ["serve"]:
        print("%s: does not run serve: %s" % (where, args))
    for a in args:
        if a.startswith("-") and a not in flags:
            print("%s: %s is not an option of tessera serve" % (where, a))
    def value(flag, default):
        return int(args[args.index(flag) + 1]) if flag in args else default
    return value("--port", 8080), value("--drain-timeout", 30)

spec = yaml.safe_load(block("yaml"))
pod = spec["spec"]["template"]["spec"]
c = pod["containers"][0]
port, drain = serve_args([str(a) for a in c["args"]], "the Deployment")
if [p["containerPort"] for p in c.get("ports", [])] != [port]:
    print("the Deployment: containerPort is not the server's --port %d" % port)
ready = c.get("readinessProbe", {}).get("httpGet", {})
if ready.get("path") != "/v1/health" or ready.get("port") != port:
    print("the Deployment: the readiness probe is not GET /v1/health on port %d" % port)
live = c.get("livenessProbe", {})
live_port = (live.get("tcpSocket") or live.get("httpGet") or {}).get("port")
if live_port != port:
    print("the Deployment: the liveness probe is not on port %d" % port)
stop = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
wait = int(stop[1]) if len(stop) == 2 and stop[0] == "sleep" else 0
grace = pod.get("terminationGracePeriodSeconds", 30)
if not grace > wait + drain:
    print("the Deployment: terminationGracePeriodSeconds %d is not longer than the preStop "
          "wait %d and --drain-timeout %d together" % (grace, wait, drain))

unit = block("ini")
exec_line = re.search(r"^ExecStart=(.*)$", unit, re.M)
stop_line = re.search(r"^TimeoutStopSec=(\d+)$", unit, re.M)
if not exec_line or not stop_line:
    print("the systemd unit has no ExecStart or TimeoutStopSec")
    sys.exit(0)
words = shlex.split(exec_line.group(1))
port, drain = serve_args(words[1:], "the systemd unit")
if not int(stop_line.group(1)) > drain:
    print("the systemd unit: TimeoutStopSec %s is not longer than --drain-timeout %d"
          % (stop_line.group(1), drain))
with open(unit_path, "w") as f:
    f.write(unit.replace(exec_line.group(0), "ExecStart=" + " ".join([binary] + words[1:])))
PY
}

# The checker must fail on a Deployment whose grace period is shorter than the drain.
sed 's/terminationGracePeriodSeconds: [0-9]*/terminationGracePeriodSeconds: 10/' "$readme" \
    >"$scratch/broken.md"
if [ -z "$(check "$scratch/broken.md")" ]; then
    echo "FAIL: the check passed a grace period of 10 s"
    exit 1
fi
problems=$(check "$readme")
if [ -n "$problems" ]; then
    printf 'FAIL: README.md:\n%s\n' "$problems"
    exit 1
fi
if ! systemd-analyze verify "$scratch/tessera.service" >"$scratch/verify" 2>&1; then
    echo "FAIL: systemd-analyze verify on the README's unit:"
    cat "$scratch/verify"
    exit 1
fi
echo "PASS: the README's Deployment and systemd unit agree with tessera serve"
