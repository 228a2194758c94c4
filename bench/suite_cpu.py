"""Where the test suite's CPU goes: per process kind, per test file and per test.

Runs ``bash scripts/test.sh`` (its arguments after ``--``) with two watchers that change nothing
of what runs:

- a pytest plugin (a module on ``PYTHONPATH`` in a folder of its own, loaded with ``-p``) that
  writes, in each xdist worker, every test's start and end with the worker's own CPU time and that
  of the children it waited for (``os.times``);
- a sampler of every process's CPU time (``/proc/<pid>/stat``, every 0.5 s), each process put on
  the worker that started it (``PYTEST_XDIST_WORKER`` in its environment, else its parent's), and
  so on the test file that worker ran at that moment: a worker's Label Studio, the backends, CLI
  runs and Chromium a file starts are counted on that file.

Prints the run's CPU seconds by kind of process (the workers themselves, Label Studio, the
backends, Chromium, CLI runs, ...), the files that cost most (their share of the run's CPU, by
kind), and the tests whose worker spent most CPU in them, each with the CPU of the processes it
waited for (the commands it ran and theirs; a module's fixture counts on the first test that
uses it). The suite is CPU-bound on 2 cores: its wall time is at least its CPU seconds over two,
so this says what a quicker suite has to cut.
A process that ends between two samples loses at most its last half second.

    .venv/bin/python bench/suite_cpu.py --top 40
    .venv/bin/python bench/suite_cpu.py -- tests/test_report_cli.py
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_NAME = "judgelab_suite_cpu_probe"
PLUGIN = r"""
import os, time
_name = "tests-%s.log" % os.environ.get("PYTEST_XDIST_WORKER", "main")
_out = open(os.path.join(os.environ["JUDGELAB_SUITE_CPU"], _name), "a", buffering=1)
def _cpu():
    t = os.times()
    return "%.3f %.3f" % (t.user + t.system, t.children_user + t.children_system)
def pytest_runtest_logstart(nodeid, location):
    _out.write("%.3f start %s %s\n" % (time.time(), _cpu(), nodeid))
def pytest_runtest_logfinish(nodeid, location):
    _out.write("%.3f end %s %s\n" % (time.time(), _cpu(), nodeid))
"""
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
WORKER_ENV = b"PYTEST_XDIST_WORKER="


def process_kind(cmdline: str, comm: str) -> str:
    """What a process is, from its command line (the kinds the report counts)."""
    if "label_studio" in cmdline or "label-studio" in cmdline:
        return "Label Studio"
    if comm.startswith("postgres") or "/postgres" in cmdline.split(" ")[0]:
        return "PostgreSQL"
    if "chrom" in comm or "chromium" in cmdline or "playwright/driver" in cmdline:
        return "Chromium"
    if "sys.stdin.readline" in cmdline:  # execnet's bootstrap: an xdist worker
        return "pytest worker"
    if " -m pytest" in cmdline:  # before "judgelab": the controller's command line names the plugin
        return "pytest controller"
    if "judgelab.backend" in cmdline or "judgelab serve" in cmdline or "multiprocessing.spawn" in cmdline:
        return "backend"
    if "bin/judgelab " in cmdline or "judgelab.sync.cli" in cmdline:
        return "judgelab CLI"
    if "python" in comm or "python" in cmdline.split(" ")[0]:
        return "other Python"
    return "other"


class Sampler(threading.Thread):
    """Every process's CPU seconds since the last sample, with its worker and kind."""

    def __init__(self, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.every, self.rows, self.stopped = every, [], threading.Event()
        self.known: dict[tuple[str, str], list] = {}  # (pid, start time) -> [worker, kind, cpu]
        self.by_pid: dict[str, list] = {}

    def run(self) -> None:
        first = True
        while not self.stopped.is_set():
            self.sample(baseline=first)
            first = False
            self.stopped.wait(self.every)
        self.sample(baseline=False)

    def sample(self, baseline: bool) -> None:
        now = time.time()
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            close = stat.rfind(")")
            comm, fields = stat[stat.find("(") + 1 : close], stat[close + 2 :].split()
            cpu, key = (int(fields[11]) + int(fields[12])) / TICK, (pid, fields[19])
            entry = self.known.get(key)
            if entry is None:
                worker, kind = self.identify(pid, comm, fields[1])
                entry = self.known[key] = self.by_pid[pid] = [worker, kind, cpu if baseline else 0.0]
            if cpu > entry[2]:
                self.rows.append((now, entry[0], entry[1], cpu - entry[2]))
                entry[2] = cpu

    def identify(self, pid: str, comm: str, parent: str) -> tuple[str | None, str]:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            environ, cmdline = [], ""
        worker = next((e[len(WORKER_ENV) :].decode() for e in environ if e.startswith(WORKER_ENV)), None)
        if worker is None and parent in self.by_pid:  # Chromium under Playwright's driver, say
            worker = self.by_pid[parent][0]
        return worker, process_kind(cmdline, comm)


def _test_logs(folder: Path) -> list[Path]:
    """The probe's logs: the xdist workers' (the controller writes one too, of the tests its workers
    ran, with its own CPU: left out when there are workers), else the one process's."""
    logs = sorted(folder.glob("tests-*.log"))
    workers = [log for log in logs if log.stem != "tests-main"]
    return workers or logs


def read_tests(folder: Path) -> tuple[dict[str, list[tuple[float, str]]], Counter, Counter]:
    """Per worker, (start time, test file) of each test; each test's own and waited-for children's
    CPU seconds."""
    starts: dict[str, list[tuple[float, str]]] = {}
    own, children = Counter(), Counter()
    for log in _test_logs(folder):
        worker, events, begun = log.stem.removeprefix("tests-"), [], {}
        for line in log.read_text().splitlines():
            at, what, cpu, waited, node = line.split(" ", 4)
            if what == "start":
                events.append((float(at), node.split("::")[0]))
                begun[node] = (float(cpu), float(waited))
            elif node in begun:
                cpu0, waited0 = begun.pop(node)
                own[node] += float(cpu) - cpu0
                children[node] += float(waited) - waited0
        starts[worker] = sorted(events)
    return starts, own, children


def read_spans(folder: Path) -> dict[str, list[tuple[float, float, str]]]:
    """Per worker, (start, end, test id) of each test, by wall clock, in the order they ran."""
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for log in _test_logs(folder):
        begun, done = {}, []
        for line in log.read_text().splitlines():
            at, what, _cpu, _waited, node = line.split(" ", 4)
            if what == "start":
                begun[node] = float(at)
            elif node in begun:
                done.append((begun.pop(node), float(at), node))
        spans[log.stem.removeprefix("tests-")] = sorted(done)
    return spans


def timeline(spans: dict[str, list[tuple[float, float, str]]], rows, started: float) -> dict:
    """Where the run's wall time went: each worker's first start, last end and the time between
    its tests (a worker's fixtures run inside its tests, so a gap is the worker waiting for xdist
    or for nothing); each file's wall time on its worker; the cores busy in each minute."""
    workers = {}
    for worker, done in sorted(spans.items()):
        if not done:
            continue
        in_tests = sum(end - start for start, end, _ in done)
        workers[worker] = {
            "first_start_s": done[0][0] - started,
            "last_end_s": done[-1][1] - started,
            "in_tests_s": in_tests,
            "tests": len(done),
        }
    file_wall: Counter = Counter()
    for done in spans.values():
        for start, end, node in done:
            file_wall[node.split("::")[0]] += end - start
    minutes: Counter = Counter()
    for at, _worker, _kind, seconds in rows:
        minutes[int((at - started) // 60)] += seconds
    busy = [round(minutes[m] / 60, 2) for m in range(max(minutes) + 1)] if minutes else []
    return {"workers": workers, "file_wall_s": dict(file_wall), "cores_busy_per_minute": busy}


def attribute(rows, starts, own: Counter) -> tuple[Counter, dict[str, Counter]]:
    """CPU seconds by kind over the run, and by test file and kind (the workers' own CPU from the
    plugin, the other processes' from the samples, on the file their worker ran then)."""
    kinds, files = Counter(), defaultdict(Counter)
    times = {worker: [at for at, _ in events] for worker, events in starts.items()}
    for at, worker, kind, seconds in rows:
        if kind == "pytest worker":
            continue  # counted per test by the plugin, exactly
        kinds[kind] += seconds
        if worker in starts:
            i = bisect.bisect_right(times[worker], at) - 1
            files[starts[worker][i][1] if i >= 0 else "(before its first test)"][kind] += seconds
        else:
            files[f"(not started by a worker: {kind})"][kind] += seconds
    for node, seconds in own.items():
        kinds["pytest worker"] += seconds
        files[node.split("::")[0]]["pytest worker"] += seconds
    return kinds, files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=30, help="files and tests shown (default 30)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("pytest_args", nargs="*", help="after --: arguments for scripts/test.sh")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="judgelab-suite-cpu-") as tmp:
        folder = Path(tmp)
        plugin_dir = folder / "plugin"  # a folder of its own: nothing else on PYTHONPATH shadows a package
        plugin_dir.mkdir()
        (plugin_dir / f"{PLUGIN_NAME}.py").write_text(PLUGIN)
        env = dict(os.environ, JUDGELAB_SUITE_CPU=str(folder))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugin_dir), env.get("PYTHONPATH")]))
        sampler = Sampler()
        sampler.start()
        started, began = time.monotonic(), time.time()
        done = subprocess.run(["bash", "scripts/test.sh", "-p", PLUGIN_NAME, *args.pytest_args], cwd=ROOT, env=env)
        wall = time.monotonic() - started
        sampler.stopped.set()
        sampler.join()
        starts, own, waited = read_tests(folder)
        spans = read_spans(folder)
    line = timeline(spans, sampler.rows, began)
    kinds, files = attribute(sampler.rows, starts, own)
    total = sum(kinds.values())
    busy = total / wall
    print(f"\nscripts/test.sh: exit {done.returncode}, {wall:.0f} s; {total:.0f} CPU seconds ({busy:.2f} cores busy)")
    for kind, seconds in kinds.most_common():
        print(f"  {kind:20s} {seconds:7.1f} s  {seconds / total:6.1%}")
    print(f"\nthe {args.top} test files that cost most (their worker's CPU and that of what it started):")
    by_file = Counter({name: sum(c.values()) for name, c in files.items()})
    for name, seconds in by_file.most_common(args.top):
        parts = ", ".join(f"{kind} {s:.0f}" for kind, s in files[name].most_common(4))
        print(f"  {seconds:6.1f} s {seconds / total:6.1%}  {name}  ({parts})")
    print(f"\nthe {args.top} tests whose worker spent most CPU in them (its own; + the commands it waited for):")
    for node, seconds in own.most_common(args.top):
        print(f"  {seconds:6.1f} s  (+{waited[node]:.1f} s)  {node}")
    print("\nthe workers' wall time (from the command's start): first test, last test's end, in tests")
    for worker, w in line["workers"].items():
        print(
            f"  {worker:6s} {w['first_start_s']:6.0f} s -> {w['last_end_s']:6.0f} s, "
            f"{w['in_tests_s']:6.0f} s in {w['tests']} tests"
        )
    print(f"\nthe {args.top} test files that took longest on their worker (wall seconds in their tests):")
    for name, seconds in Counter(line["file_wall_s"]).most_common(args.top):
        print(f"  {seconds:6.1f} s  {name}")
    print("\ncores busy in each minute of the run:", " ".join(f"{b:.1f}" for b in line["cores_busy_per_minute"]))
    if args.json:
        figures = {
            "exit": done.returncode,
            "wall_s": wall,
            "cpu_s": total,
            "kinds": dict(kinds),
            "files": {name: dict(c) for name, c in files.items()},
            "tests": dict(own),
            "tests_waited_for": dict(waited),
            "timeline": line,
        }
        args.json.write_text(json.dumps(figures, indent=1))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
