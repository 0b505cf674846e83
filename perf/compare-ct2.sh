#!/bin/sh
# tessera against an installed CTranslate2 on the same model, the same ids and
# the same threads, as ratios within one run: `tessera bench --model` and
# perf/ct2-bench run alternately, ROUNDS times each, so that both see the same
# background load; per case it prints the median over the rounds of each
# runtime and their ratio (tessera's speed over CTranslate2's: above 1,
# tessera is faster).
#
# The model is a tessera model directory (perf/make-bench-model writes
# Transformer-base with random weights that never choose EOS) and its
# CTranslate2 conversion (perf/ct2-convert --quantization int8|float32).
# CTranslate2 has no encoder-only call, so the encoder case compares one
# sentence with one decoding step on both (tessera: greedy --tgt-len 1,
# CTranslate2: ct2-bench's encoder+1step); tessera's encoder stack alone is
# printed beside it. This script only runs CTranslate2: install it yourself
# and set PYTHONPATH / LD_LIBRARY_PATH (perf/README.md).
#
# Usage: perf/compare-ct2.sh -m MODEL_DIR -c CT2_DIR [-T int8|f32|bf16]
#                            [-n THREADS] [-r ROUNDS] [-C CASES] [-t TESSERA]
#                            [-- BENCH OPTIONS: --src-len N --tgt-len N
#                                --batch N --repeat N]
#   CASES: comma-separated encoder, greedy, greedy-batch, beam4, score
#   (default all of them)
#   e.g. perf/compare-ct2.sh -m base -c base-ct2-int8 -T int8 -n 1 -r 5
set -eu

tessera=./tessera
ct2_bench=$(dirname "$0")/ct2-bench
model=
ct2_model=
type=int8
threads=1
rounds=5
cases=encoder,greedy,greedy-batch,beam4,score
while [ $# -gt 0 ]; do
    case $1 in
    -C) cases=$2; shift 2 ;;
    -m) model=$2; shift 2 ;;
    -c) ct2_model=$2; shift 2 ;;
    -T) type=$2; shift 2 ;;
    -n) threads=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -t) tessera=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare-ct2.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$model" ] || { echo "compare-ct2.sh: -m MODEL_DIR is required (see --help)" >&2; exit 2; }
[ -n "$ct2_model" ] || { echo "compare-ct2.sh: -c CT2_DIR is required (see --help)" >&2; exit 2; }
[ -x "$tessera" ] || { echo "compare-ct2.sh: '$tessera' is not an executable (-t)" >&2; exit 2; }
case $type in
int8 | f32 | bf16) ;;
*) echo "compare-ct2.sh: -T '$type': expected int8, f32 or bf16" >&2; exit 2 ;;
esac
case $rounds in
'' | *[!0-9]* | 0) echo "compare-ct2.sh: -r '$rounds': expected a positive integer" >&2; exit 2 ;;
esac
for c in $(echo "$cases" | tr ',' ' '); do
    case $c in
    encoder | greedy | greedy-batch | beam4 | score) ;;
    *) echo "compare-ct2.sh: -C: no case '$c' (encoder, greedy, greedy-batch, beam4, score)" >&2; exit 2 ;;
    esac
done
for o in "$@"; do
    case $o in
    --case | --case=* | --model | --model=* | --threads | --threads=* | --compute-type | --compute-type=*)
        echo "compare-ct2.sh: '$o' is this script's to set (-C, -m, -n, -T)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || set -- --repeat 3

out=$(mktemp)
lines=$(mktemp)
trap 'rm -f "$out" "$lines"' EXIT
# run SED-EXPRESSION COMMAND...: the command's lines, edited, onto $out; a
# runtime that fails stops the comparison (a pipeline would hide its status).
run() {
    edit=$1
    shift
    if ! "$@" >"$lines"; then
        echo "compare-ct2.sh: '$1' failed (status above); no comparison" >&2
        exit 1
    fi
    sed "$edit" "$lines" >>"$out"
}
i=0
while [ "$i" -lt "$rounds" ]; do
    run 's/^/runtime=tessera /' \
        "$tessera" bench --model "$model" --compute-type "$type" --threads "$threads" \
        --case "$cases" "$@"
    case ,$cases, in
    *,encoder,*)
        run 's/^case=greedy /runtime=tessera case=encoder+1step /' \
            "$tessera" bench --model "$model" --compute-type "$type" --threads "$threads" \
            --case greedy "$@" --tgt-len 1 ;;
    esac
    run 's/^peer=ctranslate2 /runtime=ctranslate2 /' \
        "$ct2_bench" --model "$ct2_model" --compute-type "$type" --threads "$threads" \
        --case "$cases" "$@"
    i=$((i + 1))
done

# Lines: runtime=R case=C ... median_ms=MS [tgt_tokens=N]. The ratio is
# CTranslate2's median time / tessera's for the same tokens (tok/s ratio).
awk -v rounds="$rounds" -v type="$type" -v threads="$threads" -f "$(dirname "$0")/bench-lines.awk" -f /dev/stdin "$out" <<'EOF'
{
    c = field("case"); r = field("runtime")
    if (!(c in seen)) { seen[c] = 1; order[++cases] = c }
    ms[c, r] = ms[c, r] " " field("median_ms")
    tokens[c, r] = field("tgt_tokens")
    sentences[c] = field("sentences")
}
END {
    for (n = 1; n <= cases; n++) {
        c = order[n]
        printf "case=%s compute_type=%s threads=%d sentences=%s rounds=%d", c, type, threads, sentences[c], rounds
        tt = median(ms[c, "tessera"])
        printf " tessera_ms=%.3f", tt
        if (c == "encoder") { printf " (the encoder stack alone; CTranslate2 has no such call)\n"; continue }
        if (ms[c, "ctranslate2"] == "") { printf " ctranslate2_ms=none\n"; continue }
        tc = median(ms[c, "ctranslate2"])
        printf " ctranslate2_ms=%.3f", tc
        if (tokens[c, "tessera"] != tokens[c, "ctranslate2"])
            printf " tgt_tokens_tessera=%s tgt_tokens_ctranslate2=%s", tokens[c, "tessera"], tokens[c, "ctranslate2"]
        if (c != "encoder+1step")
            printf " tok_per_s_tessera=%.1f tok_per_s_ctranslate2=%.1f", tokens[c, "tessera"] / tt * 1000, tokens[c, "ctranslate2"] / tc * 1000
        # Speed ratio on the tokens each produced.
        ratio = (tokens[c, "tessera"] / tt) / (tokens[c, "ctranslate2"] / tc)
        printf " tessera_over_ctranslate2=%.2f\n", ratio
    }
}
EOF
