"""Target for tests/e2e/test_secrets.py: secrets held where a heap snapshot would show them.

Each secret is random (made here, never in this file's text, so no code constant holds it):
  dict_key   an interned dict key "ghp_<36>" (KEYED), holding 1 MiB
  attr       an instance attribute named "sk_live_<24>" (OBJ), holding 1 MiB
  long       a value "ghp_<200>" (HELD[2]): a long token, for a small --max-str
  bearer     a value "Authorization: Bearer <18>" (HELD[0])
  url        a value "https://alice:<12>@db.example.com/app" (HELD[1])
next to ordinary names that must stay readable: KEYED["user_id"] and OBJ.payload (1 MiB each).
The values sit in a list, under no name, so that only their own text can redact them.

Prints one JSON line: ready, pid, python, secrets {name: the sensitive part}; then waits for
`stop` on stdin, prints {"done": true} and exits 0.
"""

import json
import os
import secrets
import string
import sys

ALNUM = string.ascii_letters + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
MIB = 1 << 20


class Holder:
    pass


KEYED = {}
OBJ = Holder()
HELD = []


def rand(n, alphabet=ALNUM):
    return "".join(secrets.choice(alphabet) for _ in range(n))


def build():
    """Fills KEYED, OBJ and HELD; returns the sensitive parts (for the test only)."""
    key_tail = rand(36)
    key = sys.intern("ghp_" + key_tail)
    KEYED[key] = bytearray(MIB)
    KEYED["user_id"] = bytearray(MIB)
    # A real interned key: interning an equal new string gives back the dict's own key object.
    assert sys.intern("".join(["ghp_", key_tail])) is key
    assert [k for k in KEYED if k == key][0] is key

    attr_tail = rand(24)
    setattr(OBJ, "sk_live_" + attr_tail, bytearray(MIB))
    OBJ.payload = bytearray(MIB)
    # setattr interned the name. Checked on another instance: vars(OBJ) would give OBJ a dict
    # of its own, and the walker should meet the name in the shared keys / inline values.
    probe = Holder()
    setattr(probe, "sk_live_" + attr_tail, None)
    name = [k for k in vars(probe) if k.startswith("sk_live_")][0]
    assert sys.intern("".join(["sk_live_", attr_tail])) is name

    long_tail = rand(200)
    bearer = rand(17, LOWER_DIGITS) + secrets.choice(string.digits)
    password = rand(11, LOWER_DIGITS) + secrets.choice(string.digits)
    HELD.append("Authorization: Bearer " + bearer)
    HELD.append("https://alice:" + password + "@db.example.com/app")
    HELD.append("ghp_" + long_tail)
    return {"dict_key": key_tail, "attr": attr_tail, "long": long_tail, "bearer": bearer,
            "url": password}


def announce():
    line = json.dumps({"ready": True, "pid": os.getpid(),
                       "python": "%d.%d" % sys.version_info[:2], "secrets": build()})
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    announce()
    pending = b""
    while b"stop" not in pending:
        chunk = os.read(0, 4096)
        if not chunk:
            break
        pending += chunk
    print(json.dumps({"done": True}), flush=True)


if __name__ == "__main__":
    main()
