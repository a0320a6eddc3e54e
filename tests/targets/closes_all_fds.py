"""A program that closes every descriptor above 2, as a daemon does, and gets the numbers again
for files of its own (issue 11, item 5): the agent's descriptors were among those closed, and the
agent must never read, write or truncate what now sits at their numbers. The files are in the
folder argv[1]; each must hold exactly what the program wrote when it ends with os._exit (the
agent writes its part first, while the files are still open). Spins so that the agent samples."""
import os
import sys
import time

os.closerange(3, 1024)
files = [open(os.path.join(sys.argv[1], f"own-{i}.txt"), "w+") for i in range(8)]
for f in files:
    f.write("mine\n")
    f.flush()
end = time.process_time() + 0.3
while time.process_time() < end:  # @spin
    pass
for f in files:
    f.seek(0)
    if f.read() != "mine\n":
        print(f"{f.name} changed", file=sys.stderr)
print("fds", " ".join(str(f.fileno()) for f in files))
sys.stdout.flush()
os._exit(0)
