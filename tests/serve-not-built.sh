#!/bin/sh
# In a build without libmicrohttpd (or configured --without-microhttpd),
# tessera serve and its tests do not exist: say so as a SKIP, never a pass.
echo "tessera serve is not built (--without-microhttpd, or configure found no libmicrohttpd-dev): its tests are skipped"
exit 77
