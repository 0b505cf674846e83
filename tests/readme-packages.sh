#!/bin/sh
# make check: the README's package line installs exactly debian-packages
# (issue 53): the first `apt-get install` of README.md's Quick start, with
# its continuation lines, against the file's packages (comments and blank
# lines dropped), as sets. A package missing from either side fails, by name.
# With --print, prints the README's packages, one a line (tools/fresh-root
# installs them) and checks nothing.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
readme=$srcdir/README.md
list=$srcdir/debian-packages
for f in "$readme" "$list"; do
    [ -r "$f" ] || { echo "FAIL: cannot read $f"; exit 1; }
done
# The words after "apt-get install" up to the line that does not end in a
# backslash, options (-y, --no-install-recommends) left out.
readme_packages() {
    awk '
        !found && /apt-get install/ { found = 1; line = $0; sub(/.*apt-get install/, "", line) }
        found && !done {
            if (line == "") line = $0
            more = line ~ /\\[ \t]*$/
            sub(/\\[ \t]*$/, "", line)
            n = split(line, w, /[ \t]+/)
            for (i = 1; i <= n; i++) if (w[i] != "" && w[i] !~ /^-/) print w[i]
            line = ""
            if (!more) done = 1
        }' "$readme" | sort
}
list_packages() {
    sed -e 's/#.*//' "$list" | tr -s ' \t' '\n\n' | grep -v '^$' | sort
}
if [ "${1:-}" = "--print" ]; then
    readme_packages
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/readme-packages.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM
readme_packages > "$work/readme"
list_packages > "$work/list"
status=0
if [ ! -s "$work/readme" ]; then
    echo "FAIL: README.md has no 'apt-get install' line"
    exit 1
fi
for p in $(comm -23 "$work/list" "$work/readme"); do
    echo "FAIL: $p is in debian-packages but not on the README's apt-get install line"
    status=1
done
for p in $(comm -13 "$work/list" "$work/readme"); do
    echo "FAIL: $p is on the README's apt-get install line but not in debian-packages"
    status=1
done
for d in $(uniq -d "$work/list"); do
    echo "FAIL: $d is listed twice in debian-packages"
    status=1
done
[ $status -eq 0 ] && echo "README's apt-get install line = debian-packages ($(wc -l < "$work/list") packages)"
exit $status
