"""What one run can learn of the run before it on the same fork server: nothing it is told.

One worker, so consecutive runs are children of one server. ``execute`` runs raw source (no
static checks), so each probe has the whole language: frame walks, ``os``, files.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import psutil
import pytest

from redqueen.verifiers import CandidateTest, Executor

# Every frame above the program, up to the fork server's loop, as text.
FRAME_WALK = """import sys
seen = []
f = sys._getframe()
while f is not None:
    seen.append(repr(sorted(f.f_locals.items(), key=lambda kv: kv[0])))
    f = f.f_back
r = '\\n'.join(seen)
"""


@pytest.fixture(scope="module")
def one_server():
    with Executor(workers=1, timeout=2.0, memory_mb=256) as ex:
        yield ex


def test_a_run_sees_no_trace_of_the_previous_runs_exit_status(one_server):
    exited = one_server.execute("import os\nos._exit(77)", "1")
    assert not exited.ok and "77" in exited.error
    walk = one_server.execute(FRAME_WALK, "r")
    assert walk.ok, walk.error
    frames = ast.literal_eval(walk.value)
    assert "'zygote'" in frames  # the walk reached the fork server's own loop
    assert str(77 << 8) not in frames, "the previous run's wait status is readable"


def test_a_candidate_cannot_tell_whether_the_previous_hidden_test_passed(one_server):
    snoop = (  # whether any frame above the candidate holds a run's report
        "import sys\ndef f(x):\n    g = sys._getframe()\n    while g is not None:\n"
        "        if any(isinstance(v, dict) and 'timed_out' in v for v in g.f_locals.values()):\n"
        "            return True\n"
        "        g = g.f_back\n    return False\n"
    )
    reports = []
    for first in ("return 0", "return x * x"):  # the previous item's test fails, then passes
        results = one_server.run_tests(
            [
                CandidateTest(
                    f"def f(x):\n    {first}",
                    "f",
                    "def check(c):\n    assert c(2) == 4\n",
                    "check(candidate)",
                ),
                CandidateTest(
                    snoop, "f", "def check(c):\n    raise ValueError(c(0))\n", "check(candidate)"
                ),
            ]
        )
        assert results[0].ok == (first == "return x * x")
        reports.append(results[1].error)
    assert reports == ["ValueError: False"] * 2, reports


def test_standard_descriptors_lead_nowhere(one_server):
    fds = one_server.execute(
        "import os\nr = [os.readlink(f'/proc/self/fd/{i}') for i in (0, 1, 2)]", "r"
    )
    assert fds.ok, fds.error
    assert ast.literal_eval(fds.value) == ["/dev/null"] * 3
    # An honest program that writes past ``print`` still reports its value.
    raw = one_server.execute(
        "import os, sys\nos.write(1, b'out')\nos.write(2, b'err')\n"
        "sys.__stderr__.write('more')\nsys.__stderr__.flush()\nr = 5",
        "r",
    )
    assert raw.ok and raw.value == "5", raw.error


def test_the_standard_descriptors_carry_no_flags_or_locks_from_a_previous_run(one_server):
    # An open file's status flags and flock locks belong to the open file, not the descriptor:
    # a /dev/null shared with the server would carry them from one run to every later one.
    peek = (
        "import fcntl\nr = [fcntl.fcntl(fd, fcntl.F_GETFL) for fd in (0, 1, 2)]\n"
        "try:\n    fcntl.flock(0, fcntl.LOCK_SH | fcntl.LOCK_NB)\n    r.append('free')\n"
        "except OSError:\n    r.append('locked')"
    )
    before = one_server.execute(peek, "r")
    sender = one_server.execute(
        "import fcntl, os\nfor fd in (0, 1, 2):\n"
        "    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND"
        " | os.O_NONBLOCK)\nfcntl.flock(0, fcntl.LOCK_EX)\nr = 1",
        "r",
    )
    after = one_server.execute(peek, "r")
    assert before.ok and sender.ok and after.ok, (before.error, sender.error, after.error)
    assert after.value == before.value, "a previous run's flags reached this run's descriptors"


def test_trusted_test_code_may_write_to_its_descriptors(one_server):
    test = "import os\nos.write(1, b'x')\nos.write(2, b'y')\ndef check(c):\n    assert c(2) == 4\n"
    (result,) = one_server.run_tests(
        [CandidateTest("def f(x):\n    return x * x", "f", test, "check(candidate)")]
    )
    assert result.ok, result.error


def test_a_name_created_and_removed_gets_the_next_run_a_fresh_directory(one_server):
    probe = (
        "import os\nopen('u', 'w').close()\nino = os.stat('u').st_ino\nos.unlink('u')\n"
        "r = (os.getcwd(), ino)"
    )
    first = one_server.execute(probe, "r")
    sender = one_server.execute(
        "import os\nfor i in range(50):\n    open('t', 'w').close()\n    os.unlink('t')", "1"
    )
    second = one_server.execute(probe, "r")
    assert first.ok and sender.ok and second.ok, (first.error, sender.error, second.error)
    (cwd1, ino1), (cwd2, ino2) = ast.literal_eval(first.value), ast.literal_eval(second.value)
    assert cwd1 != cwd2, "the directory a run emptied again was handed to the next run"
    if one_server.features.get("workdir_tmpfs"):
        assert ino1 == ino2, "the inode counter carried the sender's count"


def test_unnamed_files_leave_no_count_for_the_next_run(one_server):
    # O_TMPFILE takes an inode number without creating a name: the directory's times and inode
    # count stay as they were, so the directory would be handed on with its counter moved.
    probe = "import os\nopen('u', 'w').close()\nino = os.stat('u').st_ino\nos.unlink('u')\nr = ino"
    sender = (
        "import os\nmade = 0\nfor i in range(40):\n    try:\n"
        "        os.close(os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o600))\n        made += 1\n"
        "    except OSError:\n        pass\nr = made"
    )
    one_server.execute(probe, "r")  # it creates a name: each probe starts a fresh directory
    first = one_server.execute(probe, "r")
    sent = one_server.execute(sender, "r")
    second = one_server.execute(probe, "r")
    assert first.ok and sent.ok and second.ok, (first.error, sent.error, second.error)
    if one_server.features.get("seccomp"):
        assert sent.value == "0", "an unnamed file was created"
    if one_server.features.get("workdir_tmpfs"):
        assert first.value == second.value, "the inode counter carried the sender's count"


def test_a_listing_leaves_no_time_for_the_next_run(one_server):
    # A directory's first listing sets its access time to when the program chose to list it.
    peek = "import os\ns = os.stat('.')\nr = (os.getcwd(), s.st_atime_ns - s.st_mtime_ns)"
    one_server.execute("open('u', 'w').close()", "1")  # the next run starts a fresh directory
    first = one_server.execute(peek, "r")
    sender = one_server.execute("import os, time\ntime.sleep(0.05)\nr = os.listdir('.')", "r")
    second = one_server.execute(peek, "r")
    assert first.ok and sender.ok and second.ok, (first.error, sender.error, second.error)
    (cwd1, atime1), (cwd2, atime2) = ast.literal_eval(first.value), ast.literal_eval(second.value)
    assert cwd1 != cwd2 or atime1 == atime2, "the sender's listing time reached the next run"


# Whether this host lets a process mount a directory over itself read-only and without access
# times in a private mount namespace, as the fork server does (in a user namespace the kernel
# locks the access-time flags of the mounts it inherits).
NOATIME_BIND_PROBE = """
import os, sys
from redqueen.verifiers import _kernel
from redqueen.verifiers._namespaces import private_mounts, unshare_network
path = os.path.realpath(sys.base_prefix)
unshare_network()
if not private_mounts():
    sys.exit(1)
MS_RDONLY, MS_REMOUNT, MS_NOATIME, MS_BIND, MS_REC = 0x1, 0x20, 0x400, 0x1000, 0x4000
try:
    _kernel.mount(path, path, None, MS_BIND | MS_REC, None)
    _kernel.mount("none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOATIME, None)
except OSError:
    sys.exit(1)
"""


def test_the_interpreters_files_keep_no_access_time(one_server):
    # A child reads the interpreter's files (lazy imports). Where their file system keeps access
    # times, its first read of a file after a change sets that file's access time to a moment
    # the program chose, for a later run to stat. In a sandboxed child, every directory it may
    # read is mounted read-only and without access times, wherever the host allows the mount.
    allowed = subprocess.run([sys.executable, "-c", NOATIME_BIND_PROBE], timeout=60).returncode == 0
    if not allowed:
        assert not one_server.features.get("readable_noatime")
        pytest.skip("this host refuses a read-only, noatime bind mount in a private namespace")
    probe = (
        "import os, sys\n"
        "paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *sys.path)}\n"
        "r = sorted((p, os.statvfs(p).f_flag & (os.ST_RDONLY | os.ST_NOATIME))"
        " for p in paths if os.path.isdir(p))"
    )
    seen = one_server.execute(probe, "r")
    assert seen.ok, seen.error
    flags = dict(ast.literal_eval(seen.value))  # what the child can reach (root is dropped)
    assert flags, "the child reached none of the interpreter's directories"
    loose = [path for path, flag in flags.items() if flag != os.ST_RDONLY | os.ST_NOATIME]
    assert not loose, f"readable in a child and not mounted read-only without access times: {loose}"
    assert one_server.features.get("readable_noatime")
    # The prefix itself, which a child that dropped root may not reach, from the host's side:
    # the children share their fork server's mount namespace.
    prefix = os.path.realpath(sys.base_prefix)
    servers = [
        child
        for child in psutil.Process().children()
        if any(part.endswith("_zygote.py") for part in child.cmdline())
    ]
    assert servers
    for server in servers:
        with open(f"/proc/{server.pid}/mountinfo") as handle:
            fields = [line.split() for line in handle]
        options = [set(f[5].split(",")) for f in fields if f[4] == prefix]
        assert options and {"ro", "noatime"} <= options[-1], (prefix, options)


def test_stop_iteration_from_a_candidate_fails_the_test(one_server):
    test = "def check(c):\n    assert all(map(lambda p: c(p[0]) == p[1], [(2, 4), (3, 9)]))\n"
    raising, wrong, right = one_server.run_tests(
        [
            CandidateTest("def f(x):\n    raise StopIteration", "f", test, "check(candidate)"),
            CandidateTest("def f(x):\n    return 0", "f", test, "check(candidate)"),
            CandidateTest("def f(x):\n    return x * x", "f", test, "check(candidate)"),
        ]
    )
    assert not raising.ok and "StopIteration" in raising.error
    assert not wrong.ok and right.ok
