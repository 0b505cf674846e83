# Warning flags the compiler accepts, substituted as WARN_CFLAGS.
AC_DEFUN([AX_TESSERA_WARNINGS], [
  WARN_CFLAGS=
  for tessera_flag in -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wformat=2; do
    AC_MSG_CHECKING([whether $CC accepts $tessera_flag])
    tessera_save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror $tessera_flag"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
      [AC_MSG_RESULT([yes]); WARN_CFLAGS="$WARN_CFLAGS $tessera_flag"], [AC_MSG_RESULT([no])])
    CFLAGS=$tessera_save_CFLAGS
  done
  AC_SUBST([WARN_CFLAGS])
])
