#!/bin/sh
# make check: the manual page docs/tessera.1 names every command and every
# option each command's --help lists (issue 52), so that the page cannot
# fall behind the flags. Options are the --words of each --help; in the page
# a dash is written \- (roff), read back as -. It first checks a page with
# one option taken out, and fails if that passes: a checker that cannot fail
# proves nothing.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
tessera=$build/tests/command/tessera
# TESSERA_TEST_RUNNER: words put before a binary of the build (qemu for a
# cross build, tests/run-set.sh).
runner=${TESSERA_TEST_RUNNER:-}
page=$srcdir/docs/tessera.1
commands="translate score encode tokenize detokenize info bench serve"
scratch=$(mktemp -d) || exit 2
trap 'rm -rf "$scratch"' EXIT

# Prints "COMMAND OPTION" for each option of each command missing from the page $1.
missing() {
    sed 's/\\-/-/g' "$1" >"$scratch/page"
    for cmd in $commands; do
        # shellcheck disable=SC2086 # the runner is words
        if ! $runner "$tessera" "$cmd" --help >"$scratch/help" 2>&1; then
            # serve in a build without the server says so ("built without") and exits 1
            grep -q "built without" "$scratch/help" && continue
            echo "$cmd (--help failed: $(head -1 "$scratch/help"))"
            continue
        fi
        grep -q "^\.SS .*\b$cmd\b" "$scratch/page" || echo "$cmd (no section)"
        for opt in $(grep -o -- '--[a-z][a-z0-9-]*' "$scratch/help" | sort -u); do
            grep -q -E -e "$opt([^a-z0-9-]|$)" "$scratch/page" || echo "$cmd $opt"
        done
    done
}

# The checker must fail on a page that lacks an option.
sed 's/\\-\\-use\\-vmap/--gone/g' "$page" >"$scratch/broken.1"
if [ -z "$(missing "$scratch/broken.1")" ]; then
    echo "FAIL: the check passed a page without --use-vmap"
    exit 1
fi
gaps=$(missing "$page")
if [ -n "$gaps" ]; then
    printf 'FAIL: %s does not name:\n%s\n' "$page" "$gaps"
    exit 1
fi
echo "PASS: $page names every command and every option of their --help"
