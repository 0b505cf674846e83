#!/bin/sh
# In a build without the server (configured --disable-serve, or no epoll),
# tessera serve and its tests do not exist: say so as a SKIP, never a pass.
echo "tessera serve is not built (--disable-serve, or a system without epoll): its tests are skipped"
exit 77
