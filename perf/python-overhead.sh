#!/bin/sh
# What the Python module adds to a call: N batch-1 greedy translations of one
# sentence of the shipped model (models/numbers-en-de), by a C program on the
# public API (perf/python-overhead.c) and by a Python loop on
# tessera.Translator.translate_batch, each on one worker of 1 thread, as ids
# and as text; the two run alternately ROUNDS times (so both see the same
# background load), and the medians of their microseconds a call give the
# overhead: Python's median over C's, less 1 (and the median of each round's
# Python over C, the two back to back). Each also reports the CPU time
# of its calling thread a call (the computing runs on the runtime's own
# thread): the difference is what the module itself costs, steady under a
# load that moves the wall times by tens of percent.
#
#   perf/python-overhead.sh [-n CALLS] [-r ROUNDS]     (defaults 2000 and 9)
#
# Needs the module (./configure --enable-python && make) and
# perf/tessera-python-overhead (built with it). Results: perf/RESULTS.md.
set -eu

calls=2000
rounds=9
python=${PYTHON:-/usr/bin/python3}
while [ $# -gt 0 ]; do
    case $1 in
    -n) calls=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "python-overhead.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
top=$(cd "$(dirname "$0")/.." && pwd)
model=$top/models/numbers-en-de
c_prog=$top/perf/tessera-python-overhead
[ -x "$c_prog" ] && ls "$top"/python/.libs/tessera*.so >/dev/null 2>&1 ||
    { echo "python-overhead.sh: build with ./configure --enable-python && make first" >&2; exit 2; }
text="three hundred forty five thousand six hundred seventy eight"
ids=$(echo "$text" | "$top/tessera" tokenize -m "$model" --ids)
export PYTHONPATH="$top/python/.libs" LD_LIBRARY_PATH="$top/.libs"

py_loop() {
    "$python" - "$model" "$calls" "$1" "$2" <<'PY'
import sys, time
import tessera
model, n, form, source = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
batch = [[int(x) for x in source.split()]] if form == "ids" else [source]
t = tessera.Translator(model, threads=1)
translate = t.translate_batch
for _ in range(n // 10):
    translate(batch)
start, start_cpu = time.perf_counter(), time.thread_time()
for _ in range(n):
    translate(batch)
print("%.3f %.3f" % ((time.perf_counter() - start) / n * 1e6,
                     (time.thread_time() - start_cpu) / n * 1e6))
PY
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for form in ids text; do
    [ "$form" = ids ] && source=$ids || source=$text
    r=0
    while [ "$r" -lt "$rounds" ]; do
        "$c_prog" "$model" "$calls" "$form" "$source" >>"$work/c.$form"
        py_loop "$form" "$source" >>"$work/py.$form"
        r=$((r + 1))
    done
    c=$(cut -d' ' -f1 "$work/c.$form" | median)
    py=$(cut -d' ' -f1 "$work/py.$form" | median)
    c_cpu=$(cut -d' ' -f2 "$work/c.$form" | median)
    py_cpu=$(cut -d' ' -f2 "$work/py.$form" | median)
    echo "$form: C (wall, caller CPU) $(tr '\n' ',' <"$work/c.$form") us"
    echo "$form: Python (wall, caller CPU) $(tr '\n' ',' <"$work/py.$form") us"
    # Each round's pair ran back to back: the median of the pairs' ratios.
    pairs=$(paste -d' ' "$work/c.$form" "$work/py.$form" | awk '{ print $3 / $1 }' | median)
    awk -v c="$c" -v p="$py" -v cc="$c_cpu" -v pc="$py_cpu" -v f="$form" -v r="$pairs" 'BEGIN {
        printf "%s: median C %.1f us/call, Python %.1f us/call, overhead %+.1f%% (median of the rounds%s ratios %+.1f%%); caller CPU C %.1f us, Python %.1f us: %+.1f us a call (%+.2f%% of C)\n",
            f, c, p, (p / c - 1) * 100, "\047", (r - 1) * 100, cc, pc, pc - cc, (pc - cc) / c * 100 }'
done
