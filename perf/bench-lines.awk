# Helpers for the scripts that read `tessera bench` lines (scaling.sh,
# compare-ct2.sh), loaded with awk -f before each script's own program.

# The value of key `name` on the current line (key=value fields), or "".
function field(name,   i) {
    for (i = 1; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2)
    return ""
}

# The median of a space-separated list of numbers.
function median(list,   x, k, j, t, c) {
    c = split(list, x, " ")
    for (k = 2; k <= c; k++) { t = x[k]; for (j = k - 1; j >= 1 && x[j] + 0 > t + 0; j--) x[j + 1] = x[j]; x[j + 1] = t }
    return c % 2 ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2
}

# Lines without a case (bench's limits line) are not results.
!/(^| )case=/ { next }
