# A cross build needs pkg-config to read the target's .pc files. Without a
# $host-pkg-config, PKG_PROG_PKG_CONFIG falls back to the plain pkg-config
# with a warning that scrolls by; that one reads the build machine's .pc
# files, so jansson's check fails (or passes with x86-64 flags) and perf/
# links the build machine's OpenBLAS. TESSERA_CHECK_CROSS_PKG_CONFIG warns at
# once, and leaves the warning in tessera_cross_pkg_config_warning for
# configure.ac to repeat after its summary, unless pkg-config is the host's
# wrapper or its search path names the target's library directory (as
# .ci/neon's PKG_CONFIG_LIBDIR does) or a sysroot.
AC_DEFUN([TESSERA_CHECK_CROSS_PKG_CONFIG], [
  AC_REQUIRE([AC_PROG_CC])
  AC_REQUIRE([AC_CANONICAL_HOST])
  AC_REQUIRE([PKG_PROG_PKG_CONFIG])
  tessera_cross_pkg_config_warning=
  AS_IF([test "x$cross_compiling" = xyes && test -n "$PKG_CONFIG"], [
    # Debian's multiarch name of the target (i386-linux-gnu for an
    # i686-linux-gnu compiler); the triplet as given when the compiler has none.
    tessera_multiarch=`$CC -print-multiarch 2>/dev/null`
    test -n "$tessera_multiarch" || tessera_multiarch=$host_alias
    tessera_pkg_config_for_host=no
    case " $PKG_CONFIG" in
      *[[/\ ]]$host_alias-*|*[[/\ ]]$host-*) tessera_pkg_config_for_host=yes ;;
    esac
    case ":$PKG_CONFIG_LIBDIR:$PKG_CONFIG_PATH:" in
      */$tessera_multiarch/*|*/$tessera_multiarch:*|*/$host_alias/*|*/$host_alias:*)
        tessera_pkg_config_for_host=yes ;;
    esac
    # A sysroot's .pc files lie wherever it was unpacked; whoever sets both
    # has chosen them.
    AS_IF([test -n "$PKG_CONFIG_SYSROOT_DIR" && test -n "$PKG_CONFIG_LIBDIR"],
          [tessera_pkg_config_for_host=yes])
    AS_IF([test "x$tessera_pkg_config_for_host" = xno], [
      tessera_cross_pkg_config_warning="cross-compiling for $host_alias with $PKG_CONFIG, which reads the build machine's .pc files (jansson, hwloc and OpenBLAS would be found for the wrong machine): set PKG_CONFIG_LIBDIR=/usr/lib/$tessera_multiarch/pkgconfig:/usr/share/pkgconfig, or install $host_alias-pkg-config"
      AC_MSG_WARN([$tessera_cross_pkg_config_warning])
    ])
  ])
])
