#!/bin/sh
# Thread scaling of `tessera bench` on a shared, noisy machine: runs the bench
# with 1 thread and with N threads alternately, ROUNDS times each, so that both
# see the same background load, and prints per case the median over the rounds
# of each thread count (time, and target tokens/s for the decoding cases) and
# their ratio (speed-up of N threads over 1).
#
# Usage: perf/scaling.sh [-t TESSERA] [-n THREADS] [-r ROUNDS] [-- BENCH OPTIONS]
#   e.g. perf/scaling.sh -r 7 -- --case encoder --src-len 128
# Bench options default to --case encoder,greedy-batch --repeat 3.
set -eu

tessera=./tessera
threads=2
rounds=5
while [ $# -gt 0 ]; do
    case $1 in
    -t) tessera=$2; shift 2 ;;
    -n) threads=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scaling.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || set -- --case encoder,greedy-batch --repeat 3
[ -x "$tessera" ] || { echo "scaling.sh: '$tessera' is not an executable (-t)" >&2; exit 2; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
i=0
while [ "$i" -lt "$rounds" ]; do
    for t in 1 "$threads"; do
        "$tessera" bench --threads "$t" "$@" >>"$out"
    done
    i=$((i + 1))
done

# Each bench line: case=NAME ... threads=T ... median_ms=MS [tok_per_s=R].
# Speed-up = median time at 1 thread / median time at N threads.
awk -v n="$threads" '
function field(name,   i) {
    for (i = 1; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2)
    return ""
}
function median(list,   a, k, j, t, c) {
    c = split(list, a, " ")
    for (k = 2; k <= c; k++) { t = a[k]; for (j = k - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
{
    key = field("case") " sentences=" field("sentences") " src_len=" field("src_len") \
          (field("tgt_len") != "" ? " tgt_len=" field("tgt_len") : "")
    if (!(key in seen)) { seen[key] = 1; order[++cases] = key; tokens[key] = field("sentences") * field("tgt_len") }
    ms[key, field("threads")] = ms[key, field("threads")] " " field("median_ms")
}
END {
    for (c = 1; c <= cases; c++) {
        k = order[c]; one = median(ms[k, 1]); many = median(ms[k, n])
        printf "%s rounds=%d ms_1=%.3f ms_%d=%.3f", k, split(ms[k, 1], x, " "), one, n, many
        if (tokens[k] > 0)
            printf " tok_per_s_1=%.1f tok_per_s_%d=%.1f", tokens[k] / one * 1000, n, tokens[k] / many * 1000
        printf " speedup=%.2f\n", one / many
    }
}' "$out"
