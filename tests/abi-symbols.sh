#!/bin/sh
# make check: libtessera's exported symbols, three ways, must agree: the
# functions core/tessera.h declares, the names core/tessera.map lists (with
# their version node), and what the built libtessera.so exports (nm -D), each
# with that node. A function that disappears from the library, or appears in
# it, without the map saying so fails here (issue 52). It first checks a map
# with one name taken out, and fails if that passes: a checker that cannot
# fail proves nothing. SKIP where there is no shared library to read (a
# --disable-shared build, a linker without version scripts) or no nm.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
map=$srcdir/core/tessera.map
header=$srcdir/core/tessera.h
lib=$build/.libs/libtessera.so
scratch=$(mktemp -d) || exit 2
trap 'rm -rf "$scratch"' EXIT

if [ ! -f "$lib" ]; then
    echo "SKIP: no $lib (a static-only build): no exported symbols to read"
    exit 77
fi
command -v nm >/dev/null 2>&1 || { echo "SKIP: no nm (binutils)"; exit 77; }
if ! grep -q '^TESSERA_EXPORTS = -Wl,--version-script' "$build/Makefile" 2>/dev/null; then
    echo "SKIP: this build's linker takes no version script (libtool's name filter exports)"
    exit 77
fi

# The node the map puts its names in (the first one), and the names.
node=$(sed -n 's/^\(TESSERA_[0-9.]*\) {.*/\1/p' "$map" | head -1)
[ -n "$node" ] || { echo "FAIL: $map names no TESSERA_ node"; exit 1; }
map_names() { # map file
    sed -n '/global:/,/local:/p' "$1" | sed -n 's/^ *\(tessera_[a-z0-9_]*\);$/\1/p' | sort
}
# Declarations begin a line with their type, the function's name before its '('.
grep -o '^[a-z][^(]*\btessera_[a-z0-9_]*(' "$header" | grep -o 'tessera_[a-z0-9_]*($' |
    tr -d '(' | sort >"$scratch/header"
nm -D --defined-only "$lib" | awk '{ print $3 }' | sort >"$scratch/exported"

# Prints what disagrees, given the map's names in $1 (nothing: all agree).
disagreements() {
    comm -23 "$scratch/header" "$1" | sed 's/^/declared in core\/tessera.h, not in the map: /'
    comm -13 "$scratch/header" "$1" | sed 's/^/in the map, not declared in core\/tessera.h: /'
    sed -n 's/@.*//p' "$scratch/exported" | grep -v '^TESSERA_' | sort >"$scratch/exported.names"
    comm -23 "$1" "$scratch/exported.names" | sed 's/^/in the map, not exported: /'
    comm -13 "$1" "$scratch/exported.names" | sed 's/^/exported, not in the map: /'
    grep -v "@@$node\$" "$scratch/exported" | grep -vx "$node" |
        sed 's/^/exported without the version node '"$node"': /'
}

# The checker must fail on a map that lost a name.
map_names "$map" >"$scratch/map"
sed 1d "$scratch/map" >"$scratch/map.short"
if [ -z "$(disagreements "$scratch/map.short")" ]; then
    echo "FAIL: the check passes a map with $(head -1 "$scratch/map") taken out"
    exit 1
fi
problems=$(disagreements "$scratch/map")
if [ -n "$problems" ]; then
    echo "FAIL: libtessera's symbols, core/tessera.h and core/tessera.map disagree:"
    echo "$problems"
    exit 1
fi
echo "PASS: $(wc -l <"$scratch/map") functions, declared, mapped and exported in $node"
