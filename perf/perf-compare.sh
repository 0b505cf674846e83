#!/usr/bin/env bash
# perf-compare.sh ISA1 ISA2 [tessera-perf args]
#
# Runs one tessera-perf case for two kernel sets under `perf stat` and
# `perf record -e cpu-clock`, and prints the two results, the two counter
# summaries side by side, then the hottest symbols of each. Timed runs are
# made long (--repeat 20 --min-time 1, which the arguments may override) so
# that the kernel, not the set-up, fills the profile. Hardware
# counters are used when the machine exposes them; in a VM that does not
# (`perf stat -e cycles` says <not supported>) it says so and uses software
# events only. Without arguments after the two sets the case is
# `--op gemm --shape 128x512x512`.
#
# Environment: TESSERA_PERF=path of tessera-perf (default: ./perf/tessera-perf,
# then ./tessera-perf, then next to this script); KEEP=1 keeps the perf data.
# Exit status: 0, 1 when tessera-perf fails, 2 on a usage error or when perf
# is missing or not allowed to run.
set -u

usage() {
    echo "usage: $0 ISA1 ISA2 [tessera-perf args, e.g. --op gemm --shape 1x2048x512]" >&2
    echo "  ISA: scalar, avx2, avx512, neon (see 'tessera info')" >&2
}

if [ $# -lt 2 ]; then
    usage
    exit 2
fi
isa1=$1
isa2=$2
shift 2
if [ $# -eq 0 ]; then
    set -- --op gemm --shape 128x512x512
fi

if ! command -v perf >/dev/null 2>&1; then
    echo "perf-compare: 'perf' is not installed." >&2
    echo "  Debian/Ubuntu: apt-get install linux-perf   (Ubuntu: linux-tools-\$(uname -r))" >&2
    echo "  Fedora/RHEL:   dnf install perf" >&2
    exit 2
fi

bin=${TESSERA_PERF:-}
if [ -z "$bin" ]; then
    for candidate in ./perf/tessera-perf ./tessera-perf "$(dirname "$0")/tessera-perf"; do
        if [ -x "$candidate" ]; then
            bin=$candidate
            break
        fi
    done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "perf-compare: tessera-perf not found: run from the build directory after 'make'," >&2
    echo "  or set TESSERA_PERF=/path/to/tessera-perf" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/perf-compare.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
    echo "perf-compare: keeping perf data in $work"
else
    trap 'rm -rf "$work"' EXIT
fi

# Can perf count at all here (perf_event_paranoid, seccomp in containers)?
if ! perf stat -e task-clock -o "$work/probe" -- true >/dev/null 2>"$work/probe.err"; then
    echo "perf-compare: perf cannot count events here:" >&2
    sed 's/^/  /' "$work/probe.err" >&2
    echo "  (as root, or after: sysctl kernel.perf_event_paranoid=1)" >&2
    exit 2
fi

software_events=task-clock,context-switches,cpu-migrations,page-faults
perf stat -x, -e cycles -o "$work/probe" -- true >/dev/null 2>&1
if grep -q '^[0-9]' "$work/probe" 2>/dev/null && ! grep -q 'not supported\|not counted' "$work/probe"; then
    events=$software_events,cycles,instructions,branches,branch-misses,L1-dcache-loads,L1-dcache-load-misses
    echo "# hardware counters: available"
else
    events=$software_events
    echo "# hardware counters: not available here ('perf stat -e cycles' is not supported," \
        "as in most VMs); software events only"
fi
echo "# case: $bin $* (--isa ISA --no-peers --no-ceilings)"

# run_set N ISA ARGS...: results of set number N (1 or 2) go to $work/N.*
run_set() {
    local n=$1 isa=$2
    shift 2
    # Long timed runs, so that the kernel and not the set-up (filling and
    # packing the operands) dominates the profile; the case's own
    # arguments come after and win.
    local cmd=("$bin" --isa "$isa" --no-peers --no-ceilings --repeat 20 --min-time 1 "$@")
    if ! TESSERA_ISA=$isa perf stat -x, -e "$events" -o "$work/$n.stat" -- "${cmd[@]}" \
        >"$work/$n.out" 2>"$work/$n.err"; then
        echo "perf-compare: tessera-perf --isa $isa failed:" >&2
        cat "$work/$n.err" >&2
        return 1
    fi
    if ! TESSERA_ISA=$isa perf record -q -e cpu-clock -o "$work/$n.data" -- "${cmd[@]}" \
        >/dev/null 2>"$work/$n.record.err"; then
        echo "perf-compare: perf record failed for $isa (no profile):" >&2
        sed 's/^/  /' "$work/$n.record.err" >&2
        : >"$work/$n.report"
        return 0
    fi
    perf report -i "$work/$n.data" --stdio --no-children --sort symbol --percent-limit 1 \
        2>/dev/null | awk '!/^#/ && NF >= 3 { print "  " $1, $2, $3 }' | head -15 \
        >"$work/$n.report"
}

run_set 1 "$isa1" "$@" || exit 1
run_set 2 "$isa2" "$@" || exit 1

echo
echo "== results (tessera-perf lines)"
grep -h '^op=' "$work/1.out" "$work/2.out"

echo
echo "== perf stat (whole runs; both time their case for about as long, so compare the ms above"
echo "   and ratios such as instructions per cycle or misses per load, not raw counts)"
# perf stat -x, lines: value,unit,event,run-time,pct-measured,...
awk -F, -v a="$isa1" -v b="$isa2" '
    FNR == 1 { file++ }
    /^#/ || NF < 3 { next }
    {
        key = $3
        if (!(key in seen)) { seen[key] = 1; order[++n] = key }
        value[file, key] = $1
        unit[key] = $2
    }
    END {
        printf "%-24s %18s %18s %10s\n", "event", a, b, b "/" a
        for (i = 1; i <= n; i++) {
            k = order[i]; x = value[1, k]; y = value[2, k]
            ratio = (x + 0 > 0 && y ~ /^[0-9.]+$/) ? sprintf("%.3f", y / x) : "-"
            printf "%-24s %18s %18s %10s\n", k (unit[k] != "" ? " (" unit[k] ")" : ""), x, y, ratio
        }
    }' "$work/1.stat" "$work/2.stat"

echo
echo "== hottest symbols (perf record -e cpu-clock)"
for n in 1 2; do
    if [ $n = 1 ]; then echo "-- $isa1"; else echo "-- $isa2"; fi
    if [ -s "$work/$n.report" ]; then
        cat "$work/$n.report"
    else
        echo "  (no samples)"
    fi
done
exit 0
