#!/usr/bin/env bash
# libelf.a from an unpacked elfutils source tree, without elfutils' configure (which wants gcc):
# libelf/'s sources (the list of its Makefile.am) compiled with a config.h written here for
# glibc 2.17 (scripts/build-manylinux.sh). Usage: manylinux-libelf.sh SRC PREFIX CC AR CFLAGS JOBS
set -euo pipefail
src=$1 prefix=$2 cc=$3 ar=$4 cflags=$5 jobs=$6
cd "$src"
cat >config.h <<'H'
/* elfutils' config.h for a static libelf on glibc 2.17 (scripts/manylinux-libelf.sh) */
#define _GNU_SOURCE 1
#define HAVE_DECL_POWEROF2 1
#define HAVE_DECL_MEMPCPY 1
#define HAVE_DECL_MEMRCHR 1
#define HAVE_DECL_RAWMEMCHR 1
#define HAVE_DECL_REALLOCARRAY 0 /* glibc 2.26: system.h's own */
#define HAVE_ERROR_H 1
#define HAVE_VISIBILITY 1
#define HAVE_FALLTHROUGH 1
#define HAVE_MREMAP 1
H
version=$(sed -n 's/^AC_INIT(\[[^]]*\],\[\([0-9.]*\)\].*/\1/p' configure.ac)
echo "#define PACKAGE_VERSION \"${version:-0.188}\"" >>config.h
echo "#define PACKAGE_NAME \"elfutils\"" >>config.h
echo "#define PACKAGE_URL \"http://elfutils.org/\"" >>config.h
echo "#define LOCALEDIR \"/usr/share/locale\"" >>config.h
echo "#include <eu-config.h>" >>config.h
sources=$(sed -n '/^libelf_a_SOURCES/,/^$/p' libelf/Makefile.am |
          sed -e 's/libelf_a_SOURCES *=//' -e 's/\\//g')
mkdir -p obj
objs=()
for s in $sources; do objs+=("obj/${s%.c}.o"); done
printf '%s\n' $sources | xargs -P "$jobs" -I{} sh -c \
  'f={}; exec "$0" '"$cflags"' -std=gnu99 -DHAVE_CONFIG_H -D_GNU_SOURCE -I. -Ilibelf -Ilib \
     -I"$1/include" -w -c "libelf/$f" -o "obj/${f%.c}.o"' "$cc" "$prefix"
rm -f libelf.a
"$ar" rcs libelf.a "${objs[@]}"
cp libelf.a "$prefix/lib/"
cp libelf/libelf.h libelf/gelf.h libelf/nlist.h "$prefix/include/"
