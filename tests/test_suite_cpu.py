"""``bench/suite_cpu.py``: the suite's CPU put on the processes, files and tests that spent it.

Its probe plugin runs in a real pytest session here, and its sampler watches a real process that
burns CPU under a worker's name: what the bench prints is what these checks show it computes."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("suite_cpu_bench", ROOT / "bench" / "suite_cpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _bench()


def test_the_probe_plugin_records_each_tests_cpu_in_a_real_session(tmp_path):
    """A test that burns CPU and one that waits for a child burning CPU: the first's own CPU and
    the second's waited-for child are what the plugin's lines give."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / f"{bench.PLUGIN_NAME}.py").write_text(bench.PLUGIN)
    (tmp_path / "test_burn.py").write_text(
        "import subprocess, sys, time\n"
        "def burn(s):\n"
        "    end = time.process_time() + s\n"
        "    while time.process_time() < end: pass\n"
        "def test_burns():\n    burn(0.6)\n"
        "def test_waits_for_a_child():\n"
        "    subprocess.run([sys.executable, '-c', 'import time\\nend = time.process_time() + 0.6\\n"
        "while time.process_time() < end: pass'], check=True)\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, JUDGELAB_SUITE_CPU=str(out), PYTHONPATH=str(plugin), PYTEST_XDIST_WORKER="gw5")
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the probe alone, not every installed plugin
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", bench.PLUGIN_NAME, "test_burn.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    starts, own, children = bench.read_tests(out)
    assert [name for _, name in starts["gw5"]] == ["test_burn.py", "test_burn.py"]
    assert own["test_burn.py::test_burns"] >= 0.55
    assert own["test_burn.py::test_waits_for_a_child"] < 0.3
    assert children["test_burn.py::test_waits_for_a_child"] >= 0.55
    kinds, files = bench.attribute([], starts, own)
    assert files["test_burn.py"]["pytest worker"] == sum(own.values())
    # under xdist the controller logs its workers' tests too: its log is not a worker's
    (out / "tests-main.log").write_text((out / "tests-gw5.log").read_text().replace("test_burn", "test_main"))
    assert bench.read_tests(out)[0].keys() == {"gw5"}
    spans = bench.read_spans(out)
    assert spans.keys() == {"gw5"}
    assert [node for _, _, node in spans["gw5"]] == ["test_burn.py::test_burns", "test_burn.py::test_waits_for_a_child"]
    first = spans["gw5"][0][0]
    line = bench.timeline(spans, [(first + 61.0, "gw5", "backend", 30.0)], started=first - 1.0)
    worker = line["workers"]["gw5"]
    assert worker["tests"] == 2 and worker["first_start_s"] == 1.0
    assert 1.1 <= worker["in_tests_s"] <= worker["last_end_s"] - worker["first_start_s"]  # each test burned 0.6 s
    assert line["file_wall_s"]["test_burn.py"] == worker["in_tests_s"]
    assert line["cores_busy_per_minute"] == [0.0, 0.5]  # 30 CPU seconds in the run's second minute


def test_the_sampler_puts_a_processs_cpu_and_its_childs_on_the_worker_that_started_it():
    """A process started with a worker's name in its environment, and the child it starts with a
    clean environment (as Playwright starts Chromium): both counted on that worker."""
    burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\ntime.sleep(2)\n"
    # each burns 0.6 s of CPU, then lives on 2 s: the sampler sees all of it, on a loaded machine too
    child = f"child = subprocess.Popen([sys.executable, '-c', {burn!r}], env={{}})\n"
    script = f"import subprocess, sys\n{child}{burn}child.wait()\n"
    sampler = bench.Sampler(every=0.1)
    sampler.start()
    try:
        time.sleep(0.3)
        subprocess.run([sys.executable, "-c", script], env=dict(os.environ, PYTEST_XDIST_WORKER="gw9"), check=True)
        time.sleep(0.3)
    finally:
        sampler.stopped.set()
        sampler.join()
    on_worker = sum(seconds for _, worker, _, seconds in sampler.rows if worker == "gw9")
    assert on_worker >= 1.1, sampler.rows  # both processes' 0.6 s (one alone gives 0.6)
    starts = {"gw9": [(0.0, "tests/test_x.py")]}
    _, files = bench.attribute(sampler.rows, starts, {})
    assert sum(files["tests/test_x.py"].values()) == on_worker


def test_processes_are_told_apart_by_their_command_lines():
    kind = bench.process_kind
    assert kind("/v/bin/python -m judgelab.sync.label_studio_server start --port 1", "python") == "Label Studio"
    assert kind("/v/bin/python -m judgelab.backend", "python") == "backend"
    assert kind("/v/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))", "python") == "pytest worker"
    assert kind(".venv/bin/python -m pytest -q -p judgelab_suite_cpu_probe", "python") == "pytest controller"
    assert kind("/v/bin/python /v/bin/judgelab report --tables t", "judgelab") == "judgelab CLI"
    assert kind("/usr/lib/chromium/chromium --type=renderer", "chromium") == "Chromium"
    assert kind("postgres: checkpointer", "postgres") == "PostgreSQL"
