#!/bin/sh
# Throughput of `tessera translate` with workers (--workers N --threads K):
# the same many short sentences translated by each split of this machine's
# cores, run alternately ROUNDS times so that all splits see the same
# background load. Per split it prints the median time of the decoding (the
# command's wall time less the median time of a run on empty input, which is
# the model load), sentences/s and the speed-up over the first split.
#
#   perf/workers.sh -m MODEL [-s SPLITS] [-b BATCH] [-T TYPE] [-r ROUNDS]
#                   [-N SENTENCES] [-L MAX_LEN] [-t TESSERA]
#
#   -s SPLITS   space-separated WORKERSxTHREADS (default "1x1 2x1": one
#               worker against two of one thread each)
#   -b BATCH    --batch of each worker (default 1)
#   -N, -L      SENTENCES sources of 4 to 11 random ids (seeded), each
#               translated to at most MAX_LEN tokens (defaults 400 and 16)
#   -T TYPE     --compute-type (default f32)
#
#   e.g. perf/workers.sh -m base                       (batch 1, 1x1 against 2x1)
#        perf/workers.sh -m base -b 16 -s "1x1 1x2 2x1" -L 32
# MODEL: a model directory, e.g. Transformer-base from perf/make-bench-model
# (whose random weights never choose EOS, so every sentence decodes MAX_LEN
# tokens). The outputs of all splits must be identical; the script fails if not.
set -eu

tessera=./tessera
model=
splits="1x1 2x1"
batch=1
type=f32
rounds=5
sentences=400
max_len=16
while [ $# -gt 0 ]; do
    case $1 in
    -m) model=$2; shift 2 ;;
    -s) splits=$2; shift 2 ;;
    -b) batch=$2; shift 2 ;;
    -T) type=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -N) sentences=$2; shift 2 ;;
    -L) max_len=$2; shift 2 ;;
    -t) tessera=$2; shift 2 ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "workers.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$model" ] || { echo "workers.sh: -m MODEL is required (see --help)" >&2; exit 2; }
[ -x "$tessera" ] || { echo "workers.sh: '$tessera' is not an executable (-t)" >&2; exit 2; }
prog=workers.sh
# shellcheck source=perf/short-sentences.sh
. "$(dirname "$0")/short-sentences.sh"
check_model "$model"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
write_sentences "$sentences" "$vocab" "$work/in"
: >"$work/empty"

# Seconds one command takes; its output goes to $work/out.$2.
run() { # input split
    w=${2%x*} k=${2#*x}
    t0=$(now)
    "$tessera" translate -m "$model" --compute-type "$type" --batch "$batch" --max-len "$max_len" \
        --workers "$w" --threads "$k" <"$1" >"$work/out.$2"
    t1=$(now)
    echo "$t0 $t1" | awk '{ printf "%.4f\n", $2 - $1 }'
}

i=0
while [ "$i" -lt "$rounds" ]; do
    for s in $splits; do
        echo "$s load $(run "$work/empty" "$s")" >>"$work/times"
        echo "$s all $(run "$work/in" "$s")" >>"$work/times"
        if [ -f "$work/ref" ]; then
            cmp -s "$work/ref" "$work/out.$s" || {
                echo "workers.sh: split $s printed other translations than the first" >&2
                exit 1
            }
        else
            cp "$work/out.$s" "$work/ref"
        fi
    done
    i=$((i + 1))
done

echo "# $(basename "$model"), $type, $sentences sentences of 4-11 ids, --max-len $max_len, --batch $batch, $rounds rounds"
echo "# $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
printf '%-8s %10s %10s %12s %8s\n' split load_s decode_s sentences/s speedup
first=
for s in $splits; do
    load=$(awk -v s="$s" '$1 == s && $2 == "load" { print $3 }' "$work/times" | median)
    all=$(awk -v s="$s" '$1 == s && $2 == "all" { print $3 }' "$work/times" | median)
    decode=$(echo "$all $load" | awk '{ printf "%.3f", $1 - $2 }')
    [ -n "$first" ] || first=$decode
    echo "$s $load $decode $sentences $first" |
        awk '{ printf "%-8s %10.3f %10.3f %12.1f %8.2f\n", $1, $2, $3, $4 / $3, $5 / $3 }'
done
