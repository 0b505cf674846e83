# Sourced by perf/workers.sh and perf/serve-load.sh: what both need to time
# tessera on many short sentences. $prog names the script in messages.

# Checks that $1 is a model directory and sets vocab to its source vocabulary
# size; exits 2 with a message otherwise. Also checks date(1) has %N.
check_model() {
    [ -f "$1/config.json" ] || { echo "$prog: $1 is not a model directory (no config.json)" >&2; exit 2; }
    vocab=$(sed -n 's/.*"src_vocab_size"[^0-9]*\([0-9]*\).*/\1/p' "$1/config.json")
    [ -n "$vocab" ] || { echo "$prog: no src_vocab_size in $1/config.json" >&2; exit 2; }
    case $(date +%N) in
    *[!0-9]*) echo "$prog: needs a date(1) that prints nanoseconds (%N)" >&2; exit 2 ;;
    esac
}

# Writes $1 sentences of 4 to 11 ids in [4, $2) to $3, always the same ones.
write_sentences() {
    awk -v n="$1" -v v="$2" 'BEGIN {
        srand(1)
        for (i = 0; i < n; i++) {
            len = 4 + int(rand() * 8); line = ""
            for (t = 0; t < len; t++) line = line (t ? " " : "") 4 + int(rand() * (v - 4))
            print line
        }
    }' >"$3"
}

now() { date +%s.%N; }

# The median of the numbers on standard input, one per line.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
