#!/bin/sh
# Throughput of Python threads sharing one tessera.Translator of 2 workers:
# the same short sentences (batch 1, greedy, MAX_LEN tokens each) translated
# by 1 Python thread, then by 4, alternately ROUNDS times; prints each
# round's sentences/s, the CPUs the process kept busy (its CPU time over the
# wall time) and 4 threads' rate over 1's, then the ratio of the medians and
# the median of the rounds' ratios. With 2 workers
# of 1 thread on 2 cores, 1 Python thread keeps one worker busy and 4 keep
# both: the ratio is near 2 when the GIL is released for the call and the
# host's other work leaves both cores free.
#
#   perf/python-threads.sh [-m MODEL] [-r ROUNDS] [-N SENTENCES] [-L MAX_LEN] [-T TYPE]
#
#   -m MODEL    a model directory (default: Transformer-base written by
#               perf/make-bench-model into a temporary directory; needs
#               python3-torch; its random weights never choose EOS)
#   -r ROUNDS   rounds of each (default 5); -N sentences a round (default 200);
#   -L MAX_LEN  tokens decoded per sentence (default 16)
#   -T TYPE     compute_type of the Translator: f32 (default), bf16 or int8. One
#               sentence at a time, f32 and bf16 stream the weights from memory
#               each token, so two workers share the memory bandwidth; int8
#               weights of base fit the cache (perf/workers.sh -T, the same
#               for the command's own workers)
# Runs the module built in python/.libs (./configure --enable-python) with
# /usr/bin/python3 (PYTHON overrides). Results: perf/RESULTS.md.
set -eu

model=
rounds=5
sentences=200
max_len=16
type=f32
python=${PYTHON:-/usr/bin/python3}
while [ $# -gt 0 ]; do
    case $1 in
    -m) model=$2; shift 2 ;;
    -r) rounds=$2; shift 2 ;;
    -N) sentences=$2; shift 2 ;;
    -L) max_len=$2; shift 2 ;;
    -T) type=$2; shift 2 ;;
    -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "python-threads.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
top=$(cd "$(dirname "$0")/.." && pwd)
ls "$top"/python/.libs/tessera*.so >/dev/null 2>&1 ||
    { echo "python-threads.sh: no module in $top/python/.libs (./configure --enable-python && make)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$model" ]; then
    model=$work/base
    "$top/perf/make-bench-model" "$model" >/dev/null
fi

PYTHONPATH=$top/python/.libs LD_LIBRARY_PATH=$top/.libs \
"$python" - "$model" "$rounds" "$sentences" "$max_len" "$type" <<'PY'
import random, statistics, sys, threading, time
import tessera

model, rounds, n, max_len = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = tessera.Translator(model, workers=2, compute_type=sys.argv[5])
vocab = 8000
rng = random.Random(1)
sentences = [[rng.randrange(4, vocab) for _ in range(rng.randrange(4, 12))] for _ in range(n)]
t.translate_batch(sentences[:4], max_decoding_length=max_len)  # warm-up

def run(threads):
    out = [None] * n
    def work(k):
        for i in range(k, n, threads):
            out[i] = t.translate_batch([sentences[i]], max_decoding_length=max_len)[0].hypotheses
    pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    start, cpu = time.perf_counter(), time.process_time()
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    wall = time.perf_counter() - start
    return n / wall, (time.process_time() - cpu) / wall, out

rates = {1: [], 4: []}
busy = {1: [], 4: []}
outputs = {}
ratios = []
for r in range(rounds):
    for threads in (1, 4):
        rate, cpus, outputs[threads] = run(threads)
        rates[threads].append(rate)
        busy[threads].append(cpus)
    ratios.append(rates[4][-1] / rates[1][-1])
    print("round %d: 1 thread %.2f sentences/s (%.2f CPUs busy), 4 threads %.2f (%.2f): %.2fx"
          % (r + 1, rates[1][-1], busy[1][-1], rates[4][-1], busy[4][-1], ratios[-1]))
assert outputs[1] == outputs[4], "the threads' translations differ"
m1, m4 = statistics.median(rates[1]), statistics.median(rates[4])
print("median: 1 thread %.2f sentences/s (%.2f CPUs busy), 4 threads %.2f sentences/s "
      "(%.2f CPUs busy), ratio %.2f; median of the rounds' ratios %.2f"
      % (m1, statistics.median(busy[1]), m4, statistics.median(busy[4]), m4 / m1,
         statistics.median(ratios)))
PY
