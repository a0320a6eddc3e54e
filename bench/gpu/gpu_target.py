"""The real-GPU target of bench/gpu/gpu_check.py (PyTorch on CUDA): one phase per marked line,
each phase ending with torch.cuda.synchronize() on the same line, so queued kernels do not spill
into the next one.
  @SETUP   allocate a 8192 x 8192 fp32 matrix (256 MiB) and warm up
  @MATMUL  matrix multiplies for SECTION seconds: the GPU saturated
  @HOST    a pure-Python loop for SECTION seconds: the GPU idle
  @ALLOC   8 GiB more on the device, held for SECTION seconds
Between phases the program sleeps SETTLE seconds on a line of its own: NVML's utilisation is an
average over the driver's sample period (1/6 s to 1 s by product), so the first readings after a
change still carry the previous phase.
GPU_CHECK_FIXED=1: fixed amounts of work instead of fixed times (for the overhead runs, whose
wall times are compared)."""
import os
import time

import torch

SECTION = float(os.environ.get("GPU_CHECK_SECTION", "5"))
FIXED = os.environ.get("GPU_CHECK_FIXED") == "1"
SETTLE = float(os.environ.get("GPU_CHECK_SETTLE", "1.5"))
EIGHT_GIB = 8 * 2**30


def settle():
    time.sleep(SETTLE)


def main():
    a = torch.randn(8192, 8192, device="cuda"); c = a @ a; torch.cuda.synchronize()  # @SETUP
    if FIXED:
        settle()
        for _ in range(150): c = a @ a; torch.cuda.synchronize()  # @MATMUL
        settle()
        s = 0
        for i in range(20_000_000): s += i  # @HOST
        settle()
        big = torch.empty(EIGHT_GIB, dtype=torch.uint8, device="cuda"); time.sleep(1.0)  # @ALLOC
    else:
        settle()
        end = time.monotonic() + SECTION
        while time.monotonic() < end: c = a @ a; torch.cuda.synchronize()  # @MATMUL
        settle()
        s, end = 0, time.monotonic() + SECTION
        while time.monotonic() < end: s += 1  # @HOST
        settle()
        big = torch.empty(EIGHT_GIB, dtype=torch.uint8, device="cuda"); time.sleep(SECTION)  # @ALLOC
    del big, c
    torch.cuda.empty_cache()
    print("gpu_target done", s > 0)


main()
