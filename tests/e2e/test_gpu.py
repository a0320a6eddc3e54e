"""GPU profiling (docs/gpu.md) without a GPU: `scry run` against the fake libnvidia-ml.so.1 that
the Makefile builds from tests/fake_nvml/fake_nvml.c (variants: no_util lacks
nvmlDeviceGetUtilizationRates, old has only the unversioned names). The target
(tests/targets/gpu_work.py) names each phase in a file that the fake reads at every call, so the
truth of each marked line is the phase's, whatever the timing:
  BUSY   this process keeps device 0 at 90%           -> n_gpu_percent >= 85
  HOST   this process idle on the device, another one at 60% -> n_gpu_percent <= 5
  ALLOC  this process holds 8 GiB                     -> n_gpu_peak_memory_mb within 2% of 8192
The error variants must leave the program's output and exit status alone and give a profile
without GPU figures and a note (a device lost mid-run keeps what was gathered before, and says
so); --no-gpu must not even map the library."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import (REPO, SCRY, TARGETS, check_profile,  # noqa: E402
                      preferred_python, program_env)
_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

FAKE_DIR = Path(os.environ.get("BUILD", REPO / "build")) / "tests" / "fake_nvml"
TARGET = TARGETS / "gpu_work.py"
MARKERS = groundtruth.marker_lines(TARGET)
ALLOC_MB = 8192

# Phases of the fake (tests/fake_nvml/fake_nvml.c): device 0's utilisation, this process's
# memory, another process on the same device.
PHASES = """\
name Fake H200
total_mb 143771
phase start util=0
phase busy util=90
phase host util=60 putil=0 other_util=60 other_mem_mb=500
phase alloc util=0 mem_mb=8192
phase idle util=0
"""


def fake(variant=""):
    lib = FAKE_DIR / variant / "libnvidia-ml.so.1"
    if not lib.is_file():
        pytest.fail(f"the fake NVML library {lib} is missing: build it with `make test` (or "
                    f"`make {lib.relative_to(REPO)}`)")
    return lib


def gpu_run(python, tmp_path, script=PHASES, lib=None, options=(), section=0.8, settle=0.3,
            wait_ack=True, extra_env=None):
    """scry run of the target with the fake; returns (completed process, profile, fake's log).
    wait_ack: each phase waits until the agent's sampler has read it (a run in which the sampler
    does not run would wait out the target's timeout at every phase)."""
    (tmp_path / "script.txt").write_text(script)
    env = program_env()
    env.update({
        "SCRY_NVML_LIBRARY": str(lib if lib is not None else fake()),
        "SCRY_FAKE_NVML_SCRIPT": str(tmp_path / "script.txt"),
        "SCRY_FAKE_NVML_PHASE_FILE": str(tmp_path / "phase"),
        "SCRY_FAKE_NVML_LOG": str(tmp_path / "nvml.log"),
        "GPU_WORK_SECTION": str(section),
        "GPU_WORK_SETTLE": str(settle),
    })
    if wait_ack:
        env.update({"SCRY_FAKE_NVML_ACK_FILE": str(tmp_path / "ack"),
                    "GPU_WORK_ACK": str(tmp_path / "ack")})
    env.update(extra_env or {})
    out = tmp_path / "profile.json"
    argv = [str(SCRY), "run", "--no-view", "--python", python, "-o", str(out), *options,
            str(TARGET)]
    cp = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert cp.returncode >= 0, f"{argv}: killed by a signal; stderr:\n{cp.stderr}"
    assert out.is_file(), f"no profile; stderr:\n{cp.stderr}"
    profile = json.loads(out.read_text())
    check_profile(profile)
    log = (tmp_path / "nvml.log").read_text() if (tmp_path / "nvml.log").exists() else None
    return cp, profile, log


def plain_run(python, tmp_path, extra_env=None):
    env = program_env()
    env.update({"SCRY_FAKE_NVML_PHASE_FILE": str(tmp_path / "plain-phase"),
                "GPU_WORK_SECTION": "0.01", "GPU_WORK_SETTLE": "0"})
    env.update(extra_env or {})
    return subprocess.run([python, str(TARGET)], capture_output=True, text=True, env=env,
                          timeout=60)


def assert_unchanged(python, tmp_path, cp, extra_env=None):
    """The program's exit status and output are what they are without scry."""
    plain = plain_run(python, tmp_path, extra_env)
    assert plain.returncode == 3 and cp.returncode == plain.returncode, (plain, cp.stderr)
    assert cp.stdout == plain.stdout, (cp.stdout, plain.stdout)
    for line in cp.stderr.splitlines():
        assert line.startswith("scry: ") or line == plain.stderr, cp.stderr


def line_of(profile, marker):
    lineno = MARKERS[marker][0]
    for name, f in profile["files"].items():
        if name.endswith("gpu_work.py"):
            for entry in f["lines"]:
                if entry["lineno"] == lineno:
                    return entry
    pytest.fail(f"line {lineno} ({marker}) is not in the profile: {json.dumps(profile)[:2000]}")


def all_gpu_zero(profile):
    return all(e[k] == 0 for f in profile["files"].values()
               for e in f["lines"] + f["functions"]
               for k in ("n_gpu_percent", "n_gpu_avg_memory_mb", "n_gpu_peak_memory_mb"))


def assert_three_lines(profile, busy_min=85):
    """BUSY at least busy_min %, HOST at most 5%, ALLOC's peak within 2% of 8 GiB."""
    busy, host, alloc = (line_of(profile, m) for m in ("BUSY", "HOST", "ALLOC"))
    assert busy["n_gpu_percent"] >= busy_min, busy
    assert host["n_gpu_percent"] <= 5, host
    assert abs(alloc["n_gpu_peak_memory_mb"] - ALLOC_MB) <= 0.02 * ALLOC_MB, alloc
    return busy, host, alloc


def assert_balanced(log):
    """nvmlInit and nvmlShutdown once each, and no NVML call from the program's main thread."""
    assert log, "the fake wrote no log: nvmlShutdown was never called"
    f = dict(zip(log.split()[::2], map(int, log.split()[1::2])))
    assert f["inits"] == 1 and f["shutdowns"] == 1, log
    assert f["main_thread_calls"] == 0, log
    return f


def test_phases_per_line(python_exe, tmp_path):
    cp, profile, log = gpu_run(python_exe, tmp_path)
    assert_unchanged(python_exe, tmp_path, cp)
    assert profile["gpu"] is True and profile["gpu_device"] == "Fake H200", profile.get("gpu_note")
    assert profile["gpu_utilization_source"] == "process"
    assert profile["gpu_memory_source"] == "process"
    assert "gpu_note" not in profile, profile["gpu_note"]
    # HOST: another process keeps the device 60% busy there; per-process figures exclude it.
    busy, host, alloc = assert_three_lines(profile)
    assert abs(alloc["n_gpu_avg_memory_mb"] - ALLOC_MB) <= 0.02 * ALLOC_MB, alloc
    # Neither the busy nor the host line held device memory (the other process's 500 MB is not
    # this program's).
    assert busy["n_gpu_peak_memory_mb"] == 0 and host["n_gpu_peak_memory_mb"] == 0, (busy, host)
    assert alloc["n_gpu_percent"] <= 5, alloc
    calls = assert_balanced(log)["calls"]
    # Polled every 50 ms, never more than the interval allows (a few calls per poll and device).
    assert calls < 60 * profile["elapsed_time_sec"] * 4, log


def test_terminal_view_has_gpu_columns(tmp_path):
    python = preferred_python()
    cp, profile, _ = gpu_run(python, tmp_path, section=0.5)
    view = subprocess.run([str(SCRY), "view", "--cli", str(tmp_path / "profile.json")],
                          capture_output=True, text=True, timeout=30)
    assert view.returncode == 0, view.stderr
    assert "GPU: Fake H200" in view.stdout and "│    GPU │" in view.stdout, view.stdout
    busy_row = next(l for l in view.stdout.splitlines() if "# @BUSY" in l)
    assert "9" in busy_row.split("│")[4], busy_row  # ~90% in the GPU util column


def test_device_wide_when_the_pid_is_not_in_the_lists(tmp_path):
    """A container whose PID namespace the driver does not translate: this pid never appears, so
    utilisation is the device's and memory the device's growth, and the profile says so."""
    python = preferred_python()
    script = PHASES.replace("phase host util=60 putil=0 other_util=60 other_mem_mb=500",
                            "phase host util=0")
    script = script.replace("phase busy util=90", "phase busy util=90 foreign=1")
    script = script.replace("phase alloc util=0 mem_mb=8192", "phase alloc util=0 mem_mb=8192 "
                            "foreign=1")
    cp, profile, log = gpu_run(python, tmp_path, script=script, section=0.6)
    assert cp.returncode == 3
    assert profile["gpu_utilization_source"] == "device"
    assert profile["gpu_memory_source"] == "device"
    assert_three_lines(profile)
    assert_balanced(log)


def test_old_driver_unversioned_symbols(tmp_path):
    """Only nvmlInit, nvmlDeviceGetCount, ..., 16-byte process records, no per-process
    utilisation: the fallbacks give the same figures, utilisation device-wide."""
    python = preferred_python()
    script = PHASES.replace("phase host util=60 putil=0 other_util=60 other_mem_mb=500",
                            "phase host util=0 other_mem_mb=500")
    cp, profile, log = gpu_run(python, tmp_path, script=script, lib=fake("old"), section=0.6)
    assert cp.returncode == 3
    assert profile["gpu"] and profile["gpu_utilization_source"] == "device"
    assert profile["gpu_memory_source"] == "process"
    assert_three_lines(profile)
    assert_balanced(log)


def test_two_devices_average_and_name(tmp_path):
    """Device 0 at 90%, device 1 idle: the load is the mean over devices, as Scalene's."""
    python = preferred_python()
    script = "devices 2\n" + PHASES.replace("phase busy util=90", "phase busy util=90 util_other=0")
    script = script.replace("other_mem_mb=500", "other_mem_mb=500 util_other=0")
    cp, profile, log = gpu_run(python, tmp_path, script=script, section=0.6)
    assert cp.returncode == 3
    assert profile["gpu_device"] == "2 x Fake H200"
    busy, _, _ = assert_three_lines(profile, busy_min=40)
    assert busy["n_gpu_percent"] <= 50, busy
    assert_balanced(log)


@pytest.mark.parametrize("case", ["init_error", "missing_symbol", "no_library", "no_device"])
def test_errors_give_no_gpu_fields_and_a_note(tmp_path, case):
    python = preferred_python()
    script, lib, note = PHASES, None, None
    if case == "init_error":
        script, note = "init_error 999\n" + PHASES, "GPU: nvmlInit failed: Unknown Error"
    elif case == "missing_symbol":
        lib, note = fake("no_util"), "has no nvmlDeviceGetUtilizationRates"
    elif case == "no_library":
        lib, note = tmp_path / "nowhere" / "libnvidia-ml.so.1", "GPU: cannot load"
    else:
        script, note = "devices 0\n" + PHASES, "GPU: no NVIDIA device"
    cp, profile, log = gpu_run(python, tmp_path, script=script, lib=lib, options=["--gpu"],
                               section=0.1, settle=0.05, wait_ack=False)
    assert_unchanged(python, tmp_path, cp)
    assert profile["gpu"] is False and profile["gpu_device"] == ""
    assert all_gpu_zero(profile)
    assert note in profile.get("gpu_note", ""), profile.get("gpu_note")
    assert "gpu_utilization_source" not in profile
    if case == "no_device":
        assert_balanced(log)


def test_auto_mode_without_a_library_says_nothing(tmp_path):
    """Not asked for (the default, a library named): no library is no error and no note."""
    python = preferred_python()
    cp, profile, _ = gpu_run(python, tmp_path, lib=tmp_path / "nowhere" / "libnvidia-ml.so.1",
                             section=0.1, settle=0.05, wait_ack=False)
    assert cp.returncode == 3
    assert profile["gpu"] is False and "gpu_note" not in profile


def test_device_lost_mid_run_keeps_what_came_before(tmp_path):
    """GPU_IS_LOST from every call once the host phase begins: the sampler stops, the figures
    gathered before stay, the note says when and why, nothing else changes."""
    python = preferred_python()
    script = PHASES.replace("phase host util=60", "phase host lost=1 util=60")
    # After the loss no phase is acknowledged: wait for it only briefly.
    cp, profile, log = gpu_run(python, tmp_path, script=script,
                               extra_env={"GPU_WORK_ACK_TIMEOUT": "0.3"})
    assert_unchanged(python, tmp_path, cp)
    assert "GPU is lost" in profile.get("gpu_note", ""), profile.get("gpu_note")
    assert profile["gpu"] is True
    assert line_of(profile, "BUSY")["n_gpu_percent"] >= 85
    # After the loss nothing is charged: the 8 GiB the fake would report are never read.
    assert line_of(profile, "HOST")["n_gpu_percent"] == 0
    assert line_of(profile, "ALLOC")["n_gpu_peak_memory_mb"] == 0
    assert_balanced(log)


def test_no_gpu_loads_nothing(tmp_path):
    python = preferred_python()
    maps = {"GPU_WORK_MAPS": "1"}
    cp, profile, log = gpu_run(python, tmp_path, options=["--no-gpu"], section=0.1,
                               settle=0.05, wait_ack=False, extra_env=maps)
    assert "nvml mapped: False" in cp.stdout, cp.stdout
    assert profile["gpu"] is False and "gpu_note" not in profile and all_gpu_zero(profile)
    assert log is None
    # The default (a library named) does load it: the check above can fail.
    cp, profile, _ = gpu_run(python, tmp_path, section=0.1, settle=0.05, wait_ack=False,
                             extra_env=maps)
    assert "nvml mapped: True" in cp.stdout and profile["gpu"] is True, cp.stdout


def test_forked_child_is_not_sampled_and_says_so(tmp_path):
    python = preferred_python()
    cp, profile, log = gpu_run(python, tmp_path, section=0.1, settle=0.05, wait_ack=False,
                               extra_env={"GPU_WORK_FORK": "1"})
    assert cp.returncode == 3 and profile["processes"] == 2, cp.stderr
    assert profile["gpu"] is True
    assert "forked without exec is not sampled" in profile.get("gpu_note", "")
    child = line_of(profile, "CHILD")
    assert child["n_gpu_percent"] == 0 and child["n_gpu_peak_memory_mb"] == 0, child
    assert_balanced(log)


def test_mode_flags(tmp_path):
    """Scalene's mode flags: --memory alone means no GPU, --gpu alone no memory."""
    python = preferred_python()
    _, profile, log = gpu_run(python, tmp_path, options=["--memory"], section=0.1,
                                 settle=0.05, wait_ack=False)
    assert profile["gpu"] is False and log is None
    _, profile, _ = gpu_run(python, tmp_path, options=["--gpu"], section=0.1,
                               settle=0.05, wait_ack=False)
    assert profile["gpu"] is True and profile["memory"] is False
