#!/bin/sh
# The architecture, checked: every source file belongs to a layer, includes
# only files of its own layer or below, and no files include each other in a
# cycle (a file and its header, x.c and x.h, count as one module).
#
# `include-layers.sh` checks the source tree (make check); `include-layers.sh
# DIR` checks the tree at DIR. It first checks two small trees of its own, one
# with an upward include and one with a cycle, and fails if it passes either:
# a checker that cannot fail proves nothing.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}

# The layers, lowest first: a path belongs to the last layer whose prefix it
# starts with (tessera-config.h: what configure found). README's "Design"
# section describes them.
layers() {
    cat <<'EOF'
public    core/tessera.h tessera-config.h
base      base/
simd      simd/
threads   threads/
text      text/
model     core/model/
shortlist core/shortlist/
runtime   core/runtime/
network   core/network/
search    core/search/
api       core/api/
programs  cli/ perf/ tests/ tools/ python/ .ci/
EOF
}

# Prints one line per include of a tree's own files: "FILE INCLUDED". One
# awk reads every file (a sed and a dirname per include line took 15 s of
# make check on a machine whose process starts are slow); an included name is
# the tree's file at that path from the top, else beside the including file,
# else a system or generated header (tessera-config.h), left out.
includes() (
    cd "$1" || exit 2
    # Build trees inside the source tree (distcheck's, CI's) are not sources.
    find . -mindepth 2 -name config.status | sed 's|^\./||; s|/config.status$||' >"$scratch/builds"
    find . \( -name '*.c' -o -name '*.h' -o -name '*.cc' \) -type f | sed 's|^\./||' | sort |
        grep -v -F -f "$scratch/builds" >"$scratch/files"
    [ -s "$scratch/files" ] || exit 0
    # shellcheck disable=SC2046 # one word per file name (the tree's have no spaces)
    awk '
    function exists(p,    line, r) {
        if (!(p in known)) { r = (getline line < p); close(p); known[p] = (r >= 0) }
        return known[p]
    }
    /^[ \t]*#[ \t]*include[ \t]*"/ {
        inc = $0
        sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
        if (!sub(/".*/, "", inc)) next
        if (exists(inc)) { print FILENAME " " inc; next }
        dir = FILENAME
        if (!sub(/\/[^\/]*$/, "", dir)) dir = "."
        beside = dir "/" inc
        gsub(/\/\.\//, "/", beside)
        if (exists(beside)) print FILENAME " " beside
    }' $(cat "$scratch/files")
)

# Reads the layers, then the include lines; prints each violation and exits 1
# when there is one.
check() {
    { layers; echo "--"; includes "$1"; } | awk '
    function layer_of(path,    i, best, len) {
        best = 0; len = 0
        for (i = 1; i <= nprefix; i++)
            if (index(path, prefix[i]) == 1 && length(prefix[i]) > len) {
                best = prefix_layer[i]; len = length(prefix[i])
            }
        return best
    }
    function module(path) { sub(/\.(c|h|cc)$/, "", path); return path }
    # Depth-first search for a cycle through the module graph: state 1 on the
    # current path, 2 when finished.
    function visit(m,    k, n, parts, i) {
        state[m] = 1; path[++depth] = m
        n = split(edges[m], parts, " ")
        for (i = 1; i <= n; i++) {
            if (parts[i] == "") continue
            if (state[parts[i]] == 1) {
                cycle = parts[i]
                for (k = depth; k >= 1 && path[k] != parts[i]; k--)
                    cycle = path[k] " -> " cycle
                print "include cycle: " parts[i] " -> " cycle
                bad = 1
            } else if (!state[parts[i]])
                visit(parts[i])
        }
        depth--; state[m] = 2
    }
    $0 == "--" { reading = 1; next }
    !reading {
        nlayer++; name[nlayer] = $1
        for (i = 2; i <= NF; i++) { prefix[++nprefix] = $i; prefix_layer[nprefix] = nlayer }
        next
    }
    {
        a = layer_of($1); b = layer_of($2)
        if (!a) { if (!seen_out[$1]++) { print $1 ": in no layer"; bad = 1 } }
        else if (!b) { if (!seen_out[$2]++) { print $2 ": in no layer"; bad = 1 } }
        else if (b > a) {
            print $1 " (" name[a] ") includes " $2 " (" name[b] "), a layer above it"
            bad = 1
        }
        from = module($1); to = module($2)
        if (from != to && !have[from, to]++) { edges[from] = edges[from] " " to; nodes[from] = 1 }
        nodes[to] = 1
    }
    END {
        for (m in nodes) if (!state[m]) visit(m)
        exit bad
    }'
}

# A tree written for this check: files given as "PATH:INCLUDED ...".
scratch_tree() {
    dir=$1; shift
    for spec in "$@"; do
        f=${spec%%:*}
        mkdir -p "$dir/$(dirname "$f")"
        : >"$dir/$f"
        for inc in ${spec#*:}; do echo "#include \"$inc\"" >>"$dir/$f"; done
    done
}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/tessera-layers.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT INT TERM
scratch_tree "$scratch/up" "base/errors.c:base/errors.h core/model/model.h" "base/errors.h:" \
    "core/model/model.h:base/errors.h"
scratch_tree "$scratch/cycle" "core/network/a.c:core/network/a.h core/network/b.h" \
    "core/network/a.h:" "core/network/b.c:core/network/a.h" "core/network/b.h:"
scratch_tree "$scratch/fine" "base/errors.c:base/errors.h" "base/errors.h:" \
    "core/model/model.c:core/model/model.h base/errors.h" "core/model/model.h:base/errors.h"
for t in up cycle; do
    if check "$scratch/$t" >/dev/null; then
        echo "FAIL: the checker passed a tree with $( [ $t = up ] && echo 'an upward include' || echo 'a cycle')"
        exit 1
    fi
done
if ! check "$scratch/fine"; then
    echo "FAIL: the checker refused a tree without faults"
    exit 1
fi

tree=${1:-$srcdir}
if check "$tree"; then
    echo "include layers: $(includes "$tree" | wc -l) includes between the tree's own files, no cycle, none up a layer"
else
    echo "FAIL: the include graph breaks the layers (listed above; the layers are in $0)"
    exit 1
fi
