"""Loads the library built from tests/targets/rtld_next_probe.c (argv[1]) with RTLD_GLOBAL and
prints what its RTLD_NEXT and RTLD_DEFAULT look-ups answer: `next None`, `vnext None` and
`default own` without scry, and the same with it."""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
for name in ("scry_probe_next", "scry_probe_vnext", "scry_probe_default", "scry_probe_address"):
    getattr(lib, name).restype = ctypes.c_void_p
own = lib.scry_probe_address()


def show(p):
    return "None" if p is None else "own" if p == own else hex(p)


print("next", show(lib.scry_probe_next()))
print("vnext", show(lib.scry_probe_vnext()))
print("default", show(lib.scry_probe_default()))
