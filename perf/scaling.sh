#!/bin/sh
# Speed-ups of `tessera bench` on a shared, noisy machine, measured as ratios
# within one run. Two variants of the command run alternately, ROUNDS times
# each, so that both see the same background load; per case it prints the
# median over the rounds of each variant (time, and target tokens/s for the
# decoding cases) and their ratio (speed-up of the second over the first).
#
#   thread scaling (default): 1 thread against N threads (-n)
#   kernel sets (-i A,B):     TESSERA_ISA=A against TESSERA_ISA=B, both at -n
#                             threads (e.g. -i avx2,avx512 -n 1)
#
# Usage: perf/scaling.sh [-t TESSERA] [-n THREADS] [-i ISA1,ISA2] [-r ROUNDS]
#                        [-- BENCH OPTIONS]
#   e.g. perf/scaling.sh -r 7 -- --case encoder --src-len 128
#        perf/scaling.sh -i avx2,avx512 -n 2 -- --case encoder,score
# Bench options default to --case encoder,greedy-batch --repeat 3.
set -eu

tessera=./tessera
threads=2
isas=
rounds=5
while [ $# -gt 0 ]; do
    case $1 in
    -t) tessera=$2; shift 2 ;;
    -n) threads=$2; shift 2 ;;
    -i) isas=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scaling.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || set -- --case encoder,greedy-batch --repeat 3
[ -x "$tessera" ] || { echo "scaling.sh: '$tessera' is not an executable (-t)" >&2; exit 2; }
if [ -n "$isas" ]; then
    case $isas in
    *,*,*|,*|*,) echo "scaling.sh: -i takes two kernel sets, e.g. avx2,avx512" >&2; exit 2 ;;
    *,*) ;;
    *) echo "scaling.sh: -i takes two kernel sets, e.g. avx2,avx512" >&2; exit 2 ;;
    esac
    first=${isas%,*} second=${isas#*,} field=isa
else
    first=1 second=$threads field=threads
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
i=0
while [ "$i" -lt "$rounds" ]; do
    for v in "$first" "$second"; do
        if [ "$field" = isa ]; then
            TESSERA_ISA=$v "$tessera" bench --threads "$threads" "$@" >>"$out"
        else
            "$tessera" bench --threads "$v" "$@" >>"$out"
        fi
    done
    i=$((i + 1))
done

# Each bench line: case=NAME ... isa=SET threads=T ... median_ms=MS.
# Speed-up = median time of the first variant / median time of the second.
awk -v by="$field" -v a="$first" -v b="$second" -f "$(dirname "$0")/bench-lines.awk" -f /dev/stdin "$out" <<'EOF'
{
    key = field("case") " sentences=" field("sentences") " src_len=" field("src_len") \
          (field("tgt_len") != "" ? " tgt_len=" field("tgt_len") : "") \
          (by == "isa" ? " threads=" field("threads") : "")
    if (!(key in seen)) { seen[key] = 1; order[++cases] = key }
    # A real model (bench --model) says how many target tokens it produced
    # (it may stop at eos); the built-in ones produce sentences x tgt_len.
    tokens[key, field(by)] = field("tgt_tokens") != "" ? field("tgt_tokens") : field("sentences") * field("tgt_len")
    ms[key, field(by)] = ms[key, field(by)] " " field("median_ms")
}
END {
    for (c = 1; c <= cases; c++) {
        k = order[c]; ta = median(ms[k, a]); tb = median(ms[k, b])
        printf "%s rounds=%d ms_%s=%.3f ms_%s=%.3f", k, split(ms[k, a], x, " "), a, ta, b, tb
        if (tokens[k, a] > 0 && tokens[k, b] > 0)
            printf " tok_per_s_%s=%.1f tok_per_s_%s=%.1f", a, tokens[k, a] / ta * 1000, b, tokens[k, b] / tb * 1000
        printf " speedup=%.2f\n", ta / tb
    }
}
EOF
