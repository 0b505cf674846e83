#!/usr/bin/env bash
# results-table.sh [FILE]: turns tessera-perf output (FILE or standard input)
# into the Markdown of perf/RESULTS.md: the ceilings as a list, then one table per op, one row per
# case, the median ms of every kernel set and peer side by side, then the
# details of the last (best) kernel set of the run: GFLOP/s, % of its peak,
# % of the bandwidth for decode shapes, GB/s for the row-wise ops, and its
# time over each peer's. A set whose entry is still the scalar kernel is
# marked with a `*` after its time.
set -eu

awk '
BEGIN {
    split("gflops pct_peak gbps pct_bw", detail_key, " ")
    split("GFLOP/s,% peak,GB/s,% bw", detail_title, ",")
}
function field(key,    i, kv) {
    for (i = 1; i <= NF; i++) {
        if (index($i, key "=") == 1)
            return substr($i, length(key) + 2)
    }
    return ""
}
/^op=peak / {
    printf "- FMA peak, %s: %s GFLOP/s (%s thread%s)\n", field("isa"), field("gflops"),
           field("threads"), field("threads") == 1 ? "" : "s"
    next
}
/^op=bandwidth / {
    printf "- streaming read of %d MiB: %s GB/s (one sequential stream: %s GB/s)\n",
           field("bytes") / 1048576, field("gbps"), field("gbps_one_stream")
    next
}
/^op=/ {
    op = field("op")
    who = field("isa") != "" ? field("isa") : field("peer")
    if (field("isa") != "")
        best_isa[op] = who
    row = field("kernel") "|" field("name") "|" field("shape")
    if (!((op, row) in seen_row)) {
        seen_row[op, row] = 1
        rows[op, ++n_rows[op]] = row
    }
    if (!((op, who) in seen_who)) {
        seen_who[op, who] = 1
        whos[op, ++n_whos[op]] = who
    }
    if (!(op in seen_op)) {
        seen_op[op] = 1
        ops[++n_ops] = op
    }
    ms[op, row, who] = field("ms") (field("fallback") == "scalar" ? "*" : "")
    for (d = 1; d <= 4; d++) {
        v = field(detail_key[d])
        detail[op, row, who, d] = v
        if (v != "")
            has_detail[op, who, d] = 1
    }
    for (i = 1; i <= NF; i++)
        if (index($i, "ratio_") == 1) {
            split(substr($i, 7), kv, "=")
            ratio[op, row, who, kv[1]] = kv[2]
        }
}
END {
    for (o = 1; o <= n_ops; o++) {
        op = ops[o]
        best = best_isa[op]
        printf "\n### %s\n\n", op
        header = "| case | shape |"
        rule = "|---|---|"
        for (w = 1; w <= n_whos[op]; w++) {
            header = header " " whos[op, w] " ms |"
            rule = rule "---:|"
        }
        for (d = 1; d <= 4; d++)
            if ((op, best, d) in has_detail) {
                header = header " " best " " detail_title[d] " |"
                rule = rule "---:|"
            }
        for (w = 1; w <= n_whos[op]; w++) {
            who = whos[op, w]
            if ((op, who) in seen_who && !(who == best) && ratio_seen(op, who)) {
                header = header " " best "/" who " |"
                rule = rule "---:|"
                ratio_cols[op, ++n_ratio_cols[op]] = who
            }
        }
        print header
        print rule
        for (r = 1; r <= n_rows[op]; r++) {
            row = rows[op, r]
            split(row, parts, "|")
            label = parts[1] (parts[1] != "" && parts[2] != "" ? " " : "") parts[2]
            line = "| " label " | " parts[3] " |"
            for (w = 1; w <= n_whos[op]; w++)
                line = line " " ms[op, row, whos[op, w]] " |"
            for (d = 1; d <= 4; d++)
                if ((op, best, d) in has_detail)
                    line = line " " detail[op, row, best, d] " |"
            for (c = 1; c <= n_ratio_cols[op]; c++)
                line = line " " ratio[op, row, best, ratio_cols[op, c]] " |"
            print line
        }
    }
}
function ratio_seen(op, who,    k, parts) {
    for (k in ratio) {
        split(k, parts, SUBSEP)
        if (parts[1] == op && parts[4] == who)
            return 1
    }
    return 0
}
' "${1:-/dev/stdin}"
