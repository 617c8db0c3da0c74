"""The Windows workflow (.github/workflows/windows.yml) can only run on GitHub's hosted runner,
so what can be checked here is checked: it parses, each job runs on the system it claims, every
Windows step runs in PowerShell with no Linux command in it and at most one program a step (a
pwsh step fails only on its last command's exit code), it builds with build.ps1 and runs the
very smoke script the Linux test runs, its test selection names tests that exist, and the zip
it uploads is the one build.ps1 writes. build.ps1 itself is read for the PowerShell traps it
must avoid.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.corpus import REPO
from tests.packaging import windows_selection

WORKFLOW = REPO / ".github" / "workflows" / "windows.yml"
BUILD_PS1 = REPO / "packaging" / "build.ps1"
LINUX_ONLY_WORDS = re.compile(
    r"\b(apt-get|apt|sudo|xvfb-run|Xvfb|chmod|export|source|dpkg|flock)\b|/usr/|\.venv/bin|"
    r"&&|\|\||\bbuild\.sh\b"
)


def workflow() -> dict[Any, Any]:  # keys: strings, and True for a bare `on` (YAML 1.1)
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return loaded


def steps(job: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = workflow()["jobs"][job]["steps"]
    return found


def runs(job: str) -> list[str]:
    return [step["run"] for step in steps(job) if "run" in step]


def shell_of(job: str, step: dict[str, Any]) -> str:
    defaults = workflow()["jobs"][job].get("defaults", {}).get("run", {})
    return str(step.get("shell", defaults.get("shell", "")))


def uses(job: str, action: str) -> dict[str, Any]:
    [step] = [s for s in steps(job) if str(s.get("uses", "")).startswith(action + "@")]
    return step


def test_the_workflow_parses_and_runs_a_windows_and_a_linux_job() -> None:
    loaded = workflow()
    triggers = loaded["on"] if "on" in loaded else loaded[True]  # YAML 1.1: a bare `on` is true
    assert "workflow_dispatch" in triggers and "pull_request" in triggers
    assert loaded["jobs"]["windows"]["runs-on"] == "windows-latest"
    assert loaded["jobs"]["linux"]["runs-on"] == "ubuntu-latest"
    python = uses("windows", "actions/setup-python")["with"]
    assert str(python["python-version"]) == "3.11" and python["architecture"] == "x64"


def test_every_windows_step_runs_one_program_in_powershell_and_no_linux_command() -> None:
    for step in steps("windows"):
        if "run" not in step:
            continue
        assert shell_of("windows", step) == "pwsh", step
        script = step["run"].strip()
        assert "\n" not in script, f"one program a step (pwsh checks the last one only): {step}"
        assert not LINUX_ONLY_WORDS.search(script), step


def test_windows_checks_out_the_repository_bytes_without_crlf_conversion() -> None:
    names = [str(s.get("uses", s.get("run", ""))) for s in steps("windows")]
    checkout = next(i for i, n in enumerate(names) if n.startswith("actions/checkout@"))
    assert "git config --global core.autocrlf false" in names[:checkout]


def test_build_ps1_is_ascii_as_windows_powershell_reads_it() -> None:
    # 5.1 reads a script without a byte-order mark in the ANSI code page
    assert BUILD_PS1.read_bytes().isascii()


def test_every_linux_step_runs_in_bash() -> None:
    assert all(shell_of("linux", s) == "bash" for s in steps("linux") if "run" in s)


def test_windows_builds_with_build_ps1_as_the_readme_says_and_smoke_tests_the_build() -> None:
    [build] = [r for r in runs("windows") if "build.ps1" in r]
    words = shlex.split(build)
    assert words[0] == "powershell" and "-File" in words
    script = REPO / words[words.index("-File") + 1]
    assert script == BUILD_PS1 and script.is_file()
    assert words[words.index("-ExecutionPolicy") + 1] == "Bypass"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "powershell -ExecutionPolicy Bypass -File packaging\\build.ps1" in readme


def test_both_jobs_run_the_smoke_script_the_linux_test_runs() -> None:
    for job in ("windows", "linux"):
        [smoke] = [r for r in runs(job) if "smoke.py" in r]
        words = shlex.split(smoke)
        script = REPO / next(w for w in words if w.endswith("smoke.py"))
        assert script == REPO / "packaging" / "smoke.py" and script.is_file()
        assert words[-1] == ".build/dist/citewise"  # where build.ps1 and build.sh put the app
    # the Linux test's checks are packaging/smoke.py's, loaded by its build helper
    frozen_test = (REPO / "tests" / "packaging" / "test_frozen_build.py").read_text()
    assert "smoke = smoke_module()" in frozen_test
    helper = (REPO / "tests" / "packaging" / "background_build.py").read_text()
    assert '"packaging" / "smoke.py"' in helper


def test_the_test_selection_plugin_exists_and_names_tests_that_exist() -> None:
    [pytest_run] = [r for r in runs("windows") if "pytest" in r]
    words = shlex.split(pytest_run)
    # `python -m` puts the checkout on sys.path before pytest imports `-p` plugins (pytest's
    # own `pythonpath` setting comes later)
    assert words[:3] == ["python", "-m", "pytest"]
    assert words[words.index("-p") + 1] == windows_selection.__name__
    for nodeid, reason in windows_selection.LINUX_ONLY.items():
        path, _, name = nodeid.partition("::")
        source = (REPO / path).read_text(encoding="utf-8")
        assert not name or re.search(rf"^(async )?def {name}\(", source, re.M), nodeid
        assert reason


def test_a_listed_test_is_skipped_on_windows_with_its_reason() -> None:
    why = windows_selection.linux_only_reason(
        "tests/web/test_native_window.py::test_stopping_the_server_closes_the_native_window"
    )
    assert why is not None and "Xvfb" in why
    killed = windows_selection.linux_only_reason(
        "tests/engine/trace/test_store.py::"
        "test_a_store_killed_mid_write_opens_whole_and_keeps_working[0.1]"
    )
    assert killed is not None and "SIGKILL" in killed
    assert windows_selection.linux_only_reason("tests/web/test_window.py::test_x") is None


def test_the_uploaded_zip_is_the_one_build_ps1_writes() -> None:
    pattern = uses("windows", "actions/upload-artifact")["with"]["path"]
    script = BUILD_PS1.read_text(encoding="utf-8")
    assert "Citewise-$($Version)-windows-x64.zip" in script
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert version is not None
    assert fnmatch.fnmatch(f".build/dist/Citewise-{version.group(1)}-windows-x64.zip", pattern)


def test_build_ps1_checks_every_native_program_and_never_uses_compress_archive() -> None:
    script = BUILD_PS1.read_text(encoding="utf-8")
    assert "Compress-Archive" not in script  # drops hidden files; `\` names under 5.1
    assert "$ErrorActionPreference = 'Stop'" in script
    lines = script.splitlines()
    for number, line in enumerate(lines):
        code = line.split("#", 1)[0]
        if re.search(r"(^|[(=]\s*)& ", code) and "@Arguments" not in code:
            # a program run directly (not through Invoke-Checked): its exit code is checked next
            assert "$LASTEXITCODE" in lines[number + 1], f"line {number + 1}: {line.strip()}"
    for used in re.findall(r"Join-Path \$PSScriptRoot '([^']+)'", script):
        assert (REPO / "packaging" / used).is_file(), used


@pytest.mark.skipif(
    sys.platform != "linux",
    reason="actionlint comes with the dev extra's Linux wheel; the Linux runs check the workflow",
)
def test_actionlint_finds_nothing_in_the_workflow() -> None:
    # The dev extra installs it beside this interpreter (a venv's bin/ need not be on PATH).
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    actionlint = shutil.which("actionlint", path=search)
    assert actionlint is not None, "actionlint missing: install the dev extra (./test does)"
    done = subprocess.run([actionlint, str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
