# Sourced by .ci/neon and .ci/no-avx512: sets SOURCE to a source tree they
# can configure out of tree. automake refuses an out-of-tree build of a source
# tree configured in place (as .ci/run leaves it): then SOURCE is a cleaned
# copy of it under $1 (a scratch directory); otherwise it is $SRCDIR itself.
# Runs autoreconf first when configure is missing.
if [ ! -f "$SRCDIR/configure" ]; then
    echo "== autoreconf -fi (configure is missing)"
    (cd "$SRCDIR" && autoreconf -fi)
fi
SOURCE=$SRCDIR
if [ -f "$SRCDIR/config.status" ]; then
    SOURCE=$1/src
    cp -a "$SRCDIR/." "$SOURCE"
    make -s -C "$SOURCE" distclean >/dev/null
fi
