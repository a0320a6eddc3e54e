"""GPU target for tests/e2e/test_gpu.py, run against the fake libnvidia-ml.so.1: each section
names its phase in the file SCRY_FAKE_NVML_PHASE_FILE (the fake answers from that phase at every
call), waits out a settling time on another line (the agent polls NVML every few tens of ms), then
runs its own marked line for SECTION seconds. The truth per marked line is the phase's (the test's
script says what each phase is): BUSY runs while this process keeps the device 90% busy, HOST
while it does not use the device (another process may), ALLOC while it holds 8 GiB there.
GPU_WORK_MAPS=1: the last line says whether an NVML library was mapped into this process."""
import os
import sys
import time

PHASE_FILE = os.environ["SCRY_FAKE_NVML_PHASE_FILE"]
SECTION = float(os.environ.get("GPU_WORK_SECTION", "0.8"))
SETTLE = float(os.environ.get("GPU_WORK_SETTLE", "0.25"))


def phase(name):
    tmp = PHASE_FILE + ".tmp"
    with open(tmp, "w") as f:
        f.write(name)
    os.replace(tmp, PHASE_FILE)
    time.sleep(SETTLE)


def main():
    phase("busy")
    end = time.monotonic() + SECTION
    while time.monotonic() < end: pass  # @BUSY
    phase("host")
    end = time.monotonic() + SECTION
    while time.monotonic() < end: pass  # @HOST
    phase("alloc")
    time.sleep(SECTION)  # @ALLOC
    phase("idle")
    print("gpu_work done")
    if os.environ.get("GPU_WORK_MAPS") == "1":
        with open("/proc/self/maps") as f:
            print("nvml mapped:", "libnvidia-ml" in f.read())
    sys.exit(3)


main()
