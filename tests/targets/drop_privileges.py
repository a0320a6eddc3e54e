"""A program that starts as root and drops its privileges (issue 11, item 5): it spins for a
while, then setgid/setuid to the unprivileged user named by argv[1] (a uid), and spins longer.
After the drop it can no longer create files in scry's private part directory: its profile must
still be written, with the samples taken after the drop.

  before  0.3 s of CPU before the drop
  after   0.8 s of CPU after it
"""
import os
import sys
import time


def before():
    end = time.process_time() + 0.3
    while time.process_time() < end:  # @before
        pass


def after():
    end = time.process_time() + 0.8
    while time.process_time() < end:  # @after
        pass


uid = int(sys.argv[1])
before()
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
after()
print(f"uid {os.getuid()}")
