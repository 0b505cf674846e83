#!/bin/sh
# Two tessera builds on the same `tessera bench` cases, alternated: round r
# runs every case with build A, then with build B (A first on odd rounds, B
# first on even ones), so that both see the same background load. Per case
# it prints the median over the rounds of each build's median_ms, their
# ratio A / B (above 1: B is faster) and B's median pct_limit and serial_pct
# (tessera bench's own fields; A's too when it prints them).
#
# Usage: perf/bench-ab.sh -a TESSERA_A -b TESSERA_B [-r ROUNDS] [-o RAW_FILE]
#                         [-- BENCH OPTIONS]
#   BENCH OPTIONS go to both builds unchanged, e.g.
#   -- --config base --case greedy,greedy-batch --compute-type int8
#      --threads 1 --repeat 3
#   RAW_FILE keeps every bench line, each prefixed by `build=A|B round=R`.
# Output: one line per case (case, compute type, threads):
#   case=... compute_type=... threads=... a_ms=... b_ms=... a_over_b=...
#   b_pct_limit=... b_serial_pct=... [a_pct_limit=...] rounds=R
set -eu

a=
b=
rounds=5
raw=
while [ $# -gt 0 ]; do
    case $1 in
    -a) a=$2; shift 2 ;;
    -b) b=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -o) raw=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-ab.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for t in "$a" "$b"; do
    [ -n "$t" ] || { echo "bench-ab.sh: -a and -b are required (see --help)" >&2; exit 2; }
    [ -x "$t" ] || { echo "bench-ab.sh: '$t' is not an executable" >&2; exit 2; }
done
case $rounds in
'' | *[!0-9]* | 0) echo "bench-ab.sh: -r '$rounds': expected a positive integer" >&2; exit 2 ;;
esac

lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
run() { # build label, binary, round, bench options
    label=$1 bin=$2 round=$3
    shift 3
    if ! "$bin" bench "$@" >"$lines.out" 2>"$lines.err"; then
        echo "bench-ab.sh: build $label ($bin) failed in round $round:" >&2
        cat "$lines.err" >&2
        rm -f "$lines.out" "$lines.err"
        exit 1
    fi
    grep 'case=' "$lines.out" | sed "s/^/build=$label round=$round /" >>"$lines"
    rm -f "$lines.out" "$lines.err"
}
r=1
while [ "$r" -le "$rounds" ]; do
    if [ $((r % 2)) -eq 1 ]; then
        run A "$a" "$r" "$@"
        run B "$b" "$r" "$@"
    else
        run B "$b" "$r" "$@"
        run A "$a" "$r" "$@"
    fi
    r=$((r + 1))
done
[ -z "$raw" ] || cp "$lines" "$raw"

# Lines: build=A|B round=R case=C ... median_ms=MS [pct_limit=P serial_pct=S].
awk -f "$(dirname "$0")/bench-lines.awk" -f /dev/stdin "$lines" <<'EOF'
{
    key = "case=" field("case") " compute_type=" field("compute_type") " threads=" field("threads")
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    build = field("build")
    ms[key, build] = ms[key, build] " " field("median_ms")
    if (field("pct_limit") != "" && field("pct_limit") != "none")
        pct[key, build] = pct[key, build] " " field("pct_limit")
    if (field("serial_pct") != "")
        serial[key, build] = serial[key, build] " " field("serial_pct")
}
END {
    for (i = 1; i <= n; i++) {
        k = order[i]
        if (!((k, "A") in ms) || !((k, "B") in ms))
            continue
        am = median(ms[k, "A"]); bm = median(ms[k, "B"])
        printf "%s a_ms=%.3f b_ms=%.3f a_over_b=%.3f", k, am, bm, (bm > 0 ? am / bm : 0)
        if ((k, "B") in pct) printf " b_pct_limit=%.1f", median(pct[k, "B"])
        if ((k, "B") in serial) printf " b_serial_pct=%.2f", median(serial[k, "B"])
        if ((k, "A") in pct) printf " a_pct_limit=%.1f", median(pct[k, "A"])
        printf " rounds=%d\n", split(ms[k, "A"], tmp, " ")
    }
}
EOF
