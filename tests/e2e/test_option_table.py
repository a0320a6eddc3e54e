"""The option table (src/options/option_table.c) against what reads its settings: every SCRY_*
setting an option becomes is one the agent reads (src/agent/, which does not link the table: the
names must agree as text), and `scry run` hands each to the program it profiles.

The table's own consistency (one definition per option, no name twice in a command, every option
in its command's help) is tests/unit/test_options.c's.
"""

import json
import re
import subprocess

from conftest import REPO, SCRY

TABLE = REPO / "src" / "options" / "option_table.c"


def agent_settings():
    return sorted(set(re.findall(r'agent_env = "(SCRY_[A-Z0-9_]+)"', TABLE.read_text())))


def test_every_agent_setting_is_read_by_the_agent():
    settings = agent_settings()
    assert len(settings) >= 15, settings
    agent = "\n".join(p.read_text() for p in sorted((REPO / "src" / "agent").glob("*.c")))
    unread = [s for s in settings if f'"{s}"' not in agent]
    assert not unread, f"the option table names settings the agent never reads: {unread}"


def test_run_hands_the_settings_to_the_program(tmp_path):
    """The program sees each setting under the table's name, with the value its option gave."""
    prog = tmp_path / "env.py"
    prog.write_text("import json, os\n"
                    "print(json.dumps({k: v for k, v in os.environ.items()"
                    " if k.startswith('SCRY_')}))\n")
    out = tmp_path / "p.json"
    ran = subprocess.run([str(SCRY), "run", "-q", "--no-view", "-o", str(out),
                          "--cpu-sampling-rate", "0.02", "--profile-only", "env.py,other",
                          "--stacks", "--allocation-sampling-window", "4096", str(prog)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert ran.returncode == 0, ran.stderr
    env = json.loads(ran.stdout.splitlines()[-1])
    missing = [s for s in agent_settings() if s not in env and s != "SCRY_GPU_INTERVAL_MS"]
    assert not missing, f"not handed to the program: {missing}"
    assert float(env["SCRY_CPU_SAMPLING_RATE"]) == 0.02
    assert env["SCRY_PROFILE_ONLY"] == "env.py,other"
    assert env["SCRY_STACKS"] == "1"
    assert env["SCRY_ALLOCATION_WINDOW"] == "4096"
    assert "SCRY_GPU_INTERVAL_MS" not in env  # set only when --gpu-interval is given
