#!/bin/sh
# Speed-ups of `tessera bench` on a shared, noisy machine, measured as ratios
# within one run. Two variants of the command run alternately, ROUNDS times
# each (the first variant first on odd rounds, the second first on even
# ones), so that both see the same background load; per case it prints the
# median over the rounds of each variant (time, and target tokens/s for the
# decoding cases) and their ratio (speed-up of the second over the first),
# then the second variant's median pct_limit, serial_pct and imbalance_pct.
#
#   thread scaling (default): 1 thread against N threads (-n)
#   kernel sets (-i A,B):     TESSERA_ISA=A against TESSERA_ISA=B, both at -n
#                             threads (e.g. -i avx2,avx512 -n 1)
#   builds (-b OTHER):        the -t build against OTHER (before and after a
#                             change), both at -n threads
#
# Usage: perf/scaling.sh [-t TESSERA] [-n THREADS] [-i ISA1,ISA2 | -b OTHER]
#                        [-r ROUNDS] [-o RAW_FILE] [-- BENCH OPTIONS]
#   e.g. perf/scaling.sh -r 7 -- --case encoder --src-len 128
#        perf/scaling.sh -i avx2,avx512 -n 2 -- --case encoder,score
#        perf/scaling.sh -t OLD/tessera -b ./tessera -n 1 -- --config base --case greedy-batch
# Bench options default to --case encoder,greedy-batch --repeat 3. RAW_FILE
# keeps every bench line, each prefixed by variant=V round=R.
set -eu

tessera=./tessera
threads=2
isas=
other=
rounds=5
raw=
while [ $# -gt 0 ]; do
    case $1 in
    -t) tessera=$2; shift 2 ;;
    -n) threads=$2; shift 2 ;;
    -i) isas=$2; shift 2 ;;
    -b) other=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -o) raw=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scaling.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || set -- --case encoder,greedy-batch --repeat 3
[ -x "$tessera" ] || { echo "scaling.sh: '$tessera' is not an executable (-t)" >&2; exit 2; }
case $rounds in
'' | *[!0-9]* | 0) echo "scaling.sh: -r '$rounds': expected a positive integer" >&2; exit 2 ;;
esac
if [ -n "$isas" ] && [ -n "$other" ]; then
    echo "scaling.sh: -i and -b compare different things; give one" >&2; exit 2
elif [ -n "$isas" ]; then
    case $isas in
    *,*,*|,*|*,) echo "scaling.sh: -i takes two kernel sets, e.g. avx2,avx512" >&2; exit 2 ;;
    *,*) ;;
    *) echo "scaling.sh: -i takes two kernel sets, e.g. avx2,avx512" >&2; exit 2 ;;
    esac
    kind=isa first=${isas%,*} second=${isas#*,}
elif [ -n "$other" ]; then
    [ -x "$other" ] || { echo "scaling.sh: '$other' is not an executable (-b)" >&2; exit 2; }
    kind=build first=a second=b
else
    kind=threads first=1 second=$threads
fi

out=$(mktemp)
lines=$(mktemp)
trap 'rm -f "$out" "$lines"' EXIT
# run VARIANT ROUND: one bench run of that variant, its lines tagged; a run
# that fails stops the comparison.
run() {
    variant=$1
    shift
    case $kind in
    isa) TESSERA_ISA=$variant "$tessera" bench --threads "$threads" "$@" ;;
    build) if [ "$variant" = a ]; then bin=$tessera; else bin=$other; fi
        "$bin" bench --threads "$threads" "$@" ;;
    threads) "$tessera" bench --threads "$variant" "$@" ;;
    esac
}
i=1
while [ "$i" -le "$rounds" ]; do
    if [ $((i % 2)) -eq 1 ]; then order="$first $second"; else order="$second $first"; fi
    for v in $order; do
        if ! run "$v" "$@" >"$lines"; then
            echo "scaling.sh: variant $v failed in round $i (status above)" >&2
            exit 1
        fi
        sed "s/^/variant=$v round=$i /" "$lines" >>"$out"
    done
    i=$((i + 1))
done
[ -z "$raw" ] || cp "$out" "$raw"

# Each bench line: variant=V round=R case=NAME ... threads=T ... median_ms=MS
# [pct_limit=P serial_pct=S imbalance_pct=I]. Speed-up = the first variant's median time
# over the second's.
awk -v by="$kind" -v a="$first" -v b="$second" -f "$(dirname "$0")/bench-lines.awk" -f /dev/stdin "$out" <<'EOF'
{
    key = field("case") " sentences=" field("sentences") " src_len=" field("src_len") \
          (field("tgt_len") != "" ? " tgt_len=" field("tgt_len") : "") \
          (field("compute_type") != "" ? " compute_type=" field("compute_type") : "") \
          (by != "threads" ? " threads=" field("threads") : "")
    v = field("variant")
    if (!(key in seen)) { seen[key] = 1; order[++cases] = key }
    # A real model (bench --model) says how many target tokens it produced
    # (it may stop at eos); the built-in ones produce sentences x tgt_len.
    tokens[key, v] = field("tgt_tokens") != "" ? field("tgt_tokens") : field("sentences") * field("tgt_len")
    ms[key, v] = ms[key, v] " " field("median_ms")
    if (field("pct_limit") != "" && field("pct_limit") != "none")
        pct[key, v] = pct[key, v] " " field("pct_limit")
    if (field("serial_pct") != "")
        serial[key, v] = serial[key, v] " " field("serial_pct")
    if (field("imbalance_pct") != "")
        imbalance[key, v] = imbalance[key, v] " " field("imbalance_pct")
}
END {
    for (c = 1; c <= cases; c++) {
        k = order[c]; ta = median(ms[k, a]); tb = median(ms[k, b])
        printf "%s rounds=%d ms_%s=%.3f ms_%s=%.3f", k, split(ms[k, a], x, " "), a, ta, b, tb
        if (tokens[k, a] > 0 && tokens[k, b] > 0)
            printf " tok_per_s_%s=%.1f tok_per_s_%s=%.1f", a, tokens[k, a] / ta * 1000, b, tokens[k, b] / tb * 1000
        printf " speedup=%.3f", ta / tb
        if ((k, b) in pct) printf " pct_limit_%s=%.1f", b, median(pct[k, b])
        if ((k, b) in serial) printf " serial_pct_%s=%.2f", b, median(serial[k, b])
        if ((k, b) in imbalance) printf " imbalance_pct_%s=%.2f", b, median(imbalance[k, b])
        printf "\n"
    }
}
EOF
