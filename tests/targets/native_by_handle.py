"""Native memory reached through libc's own handle (issue 11, item 6): ctypes.CDLL(libc) looks
each function up with dlsym on libc's handle, which used to return libc's own malloc, not scry's
hook, so that none of this was counted. Lines marked `# @name` are checked by
tests/e2e/test_run_hostile.py:

  malloc   200 MiB malloc'ed and touched, kept until `free1`
  realloc  a 16-byte block realloc'ed to 200 MiB and touched, kept until `free2`
           (both held at once: the footprint passes 400 MiB)
  free1    free(malloc's block), through the handle
  free2    free(realloc's block), through the handle
  mmap     200 MiB of anonymous memory mapped and touched, unmapped at `munmap`
  dlvsym   malloc looked up with dlvsym on libc's handle (GLIBC_2.2.5, x86-64's first version),
           200 MiB, touched, freed at `free3`
"""
import ctypes
import ctypes.util
import mmap
import sys

MB = 1 << 20
N = 200 * MB

libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.realloc.restype = ctypes.c_void_p
libc.realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.free.restype = None
libc.free.argtypes = [ctypes.c_void_p]
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.munmap.restype = ctypes.c_int
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.dlvsym.restype = ctypes.c_void_p
libc.dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
PROT = mmap.PROT_READ | mmap.PROT_WRITE
FLAGS = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
MALLOC_T = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)


def touch(p):
    ctypes.memset(p, 1, N)  # resident, not only reserved


def held():
    a = libc.malloc(N)  # @malloc
    touch(a)
    b = libc.realloc(libc.malloc(16), N)  # @realloc
    touch(b)
    libc.free(a)  # @free1
    libc.free(b)  # @free2


def mapped():
    m = libc.mmap(None, N, PROT, FLAGS, -1, 0)  # @mmap
    touch(m)
    libc.munmap(m, N)  # @munmap


def versioned():
    malloc = MALLOC_T(libc.dlvsym(libc._handle, b"malloc", b"GLIBC_2.2.5"))
    c = malloc(N)  # @dlvsym
    touch(c)
    libc.free(c)  # @free3


held()
mapped()
versioned()
sys.stdout.write("done\n")
