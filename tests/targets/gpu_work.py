"""GPU target for tests/e2e/test_gpu.py, run against the fake libnvidia-ml.so.1: each section
names its phase in the file SCRY_FAKE_NVML_PHASE_FILE (the fake answers from that phase at every
call), waits on another line until the fake says the agent's sampler has read the phase
(GPU_WORK_ACK) and a settling time more (the agent polls NVML every few tens of ms), then
runs its own marked line for SECTION seconds. The truth per marked line is the phase's (the test's
script says what each phase is): BUSY runs while this process keeps the device 90% busy, HOST
while it does not use the device (another process may), ALLOC while it holds 8 GiB there.
GPU_WORK_FORK=1: at the end a forked child spins for 0.2 s.
GPU_WORK_MAPS=1: the last line says whether an NVML library was mapped into this process."""
import os
import sys
import time

PHASE_FILE = os.environ["SCRY_FAKE_NVML_PHASE_FILE"]
SECTION = float(os.environ.get("GPU_WORK_SECTION", "0.8"))
SETTLE = float(os.environ.get("GPU_WORK_SETTLE", "0.25"))


ACK_FILE = os.environ.get("GPU_WORK_ACK")  # the fake's SCRY_FAKE_NVML_ACK_FILE
ACK_TIMEOUT = float(os.environ.get("GPU_WORK_ACK_TIMEOUT", "5"))


def acknowledged(name):
    try:
        with open(ACK_FILE) as f:
            return f.read() == name
    except OSError:
        return False


def phase(name):
    tmp = PHASE_FILE + ".tmp"
    with open(tmp, "w") as f:
        f.write(name)
    os.replace(tmp, PHASE_FILE)
    # Until the sampler has read the new phase (however loaded the machine), then the settling
    # time for its other readings.
    deadline = time.monotonic() + ACK_TIMEOUT
    while ACK_FILE and not acknowledged(name) and time.monotonic() < deadline:
        time.sleep(0.01)
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
    if os.environ.get("GPU_WORK_FORK") == "1":
        child = os.fork()
        if child == 0:
            end = time.monotonic() + 0.2
            while time.monotonic() < end: pass  # @CHILD
            os._exit(0)
        os.waitpid(child, 0)
    print("gpu_work done")
    if os.environ.get("GPU_WORK_MAPS") == "1":
        with open("/proc/self/maps") as f:
            print("nvml mapped:", "libnvidia-ml" in f.read())
    sys.exit(3)


main()
