"""A sandbox that cannot start says why in plain words: which path, permission or kernel setting, and what to do."""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from harness.sandbox import diagnose
from harness.sandbox.launch import Launcher, SandboxUnavailable, bubblewrap_missing


def test_a_folder_the_sandbox_user_cannot_enter_is_named_with_its_mode_and_the_remedy():
    home = Path(tempfile.mkdtemp(dir="/tmp"))  # 0700, in a folder everyone may enter
    try:
        (home / "python" / "bin").mkdir(parents=True)
        line = f"bwrap: execvp {home}/python/bin/python3: No such file or directory"
        said = diagnose.explain(line, user="nobody")
    finally:
        shutil.rmtree(home)
    assert said.startswith(f"the user nobody cannot enter {home} (mode drwx------")
    assert f"chmod o+x {home}" in said and said.endswith(f"(bubblewrap said: {line})")


def test_a_kernel_that_refuses_user_namespaces_is_named_with_the_setting(tmp_path, monkeypatch):
    setting = tmp_path / "max_user_namespaces"
    setting.write_text("0\n")
    remedy = "sysctl -w user.max_user_namespaces=15000"
    monkeypatch.setattr(diagnose, "_USERNS_SETTINGS", ((str(setting), "0", remedy),))
    said = diagnose.explain("bwrap: Creating new namespace failed: No space left on device")
    assert "refuses new user namespaces" in said and "= 0" in said
    assert remedy in said


def test_an_unknown_failure_keeps_bubblewraps_words():
    assert diagnose.explain("bwrap: something new") == "the sandbox did not start: bwrap: something new"


def test_a_sandbox_that_cannot_see_the_interpreter_says_which_path(monkeypatch):
    if bubblewrap_missing():
        pytest.fail(bubblewrap_missing())
    # The view without the Python installation: bubblewrap cannot find the interpreter.
    monkeypatch.setattr("harness.sandbox.view.python_paths", lambda checkout=None: ["/usr"])
    if os.path.realpath(sys.base_prefix).startswith("/usr/"):
        pytest.skip("this Python lives in /usr, which the sandbox always sees")
    with pytest.raises(SandboxUnavailable) as failed:
        with Launcher("sandbox", start_seconds=20) as launcher:
            launcher.sandbox().close()
    message = str(failed.value)
    assert message.startswith(f"the sandbox cannot see {sys.executable}, which exists on this machine"), message
    assert "(bubblewrap said: bwrap: execvp" in message
