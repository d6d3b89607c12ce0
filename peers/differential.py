#!/usr/bin/env python3
"""Differential runs: does ``pytest --aliascheck`` change the outcome of third-party test suites?

Per suite: download the pinned sdist from PyPI and unpack it into ``WORK/NAME``; make the venv
``WORK/venv-NAME`` with aliascheck (editable: this working tree, or ``--rev``'s snapshot), pytest,
pytest-timeout and what the tests need, then ``pip install -e`` the unpacked sdist, so the library
is in the pytest root and counts as project code, as for its developers; run the suite from there
with its own pytest config, plain (``-p no:aliascheck``) and under ``--aliascheck``, and compare
every test's outcome (passed, failed, error, skipped, xfail). See docs/differential.md.

    python peers/differential.py --list
    python peers/differential.py cachetools toolz --repeat 2 --rev HEAD
    python peers/differential.py boltons --deselect tests/test_x.py::test_y

Exit status: 0 when no outcome differs and no run hangs, 1 otherwise (or a suite could not be set
up), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # the aliascheck checkout


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    version: str
    targets: tuple[str, ...]  # what its developers hand pytest, relative to the unpacked root
    needs: tuple[str, ...] = ()  # what its tests import besides pytest
    upstream: tuple[str, ...] = ()  # paths the sdist lacks: copied from --source NAME=DIR
    tag: str = ""  # where --source is a git dir: git archive TAG
    build: tuple[str, ...] = ()  # constraints its own build needs (PIP_CONSTRAINT while it is installed)


SUITES = {s.name: s for s in [
    Suite("cachetools", "8.0.0", ("tests",)),
    Suite("more-itertools", "11.2.1", ("tests",)),
    Suite("toolz", "1.2.0", ("toolz",)),
    Suite("boltons", "26.2.0", ("--doctest-modules", "boltons", "tests")),
    Suite("sortedcontainers", "2.4.0", ("sortedcontainers", "tests"), upstream=("tests", "tox.ini"), tag="v2.4.0"),
    Suite("attrs", "26.1.0", ("tests",), needs=("hypothesis", "pympler", "cloudpickle")),
    Suite("glom", "25.12.0", ("--doctest-modules", "glom"), needs=("pyyaml",)),
    Suite("funcy", "2.1", ("tests",), needs=("whatever",)),
    Suite("portion", "2.6.3", ("tests",), needs=("pytest-benchmark",)),
    Suite("tomlkit", "0.15.2", ("tests",)),
    Suite("intervaltree", "3.2.1", (".",)),
    Suite("pyparsing", "3.3.3", ("tests", "examples/tiny/tests"), needs=("railroad-diagrams", "jinja2", "matplotlib")),
    # async code, and a suite run under coverage (its own addopts: --cov aiostream)
    Suite("sqlparse", "0.6.1", ("tests",)),
    Suite("asyncstdlib", "3.14.0", ("unittests",), needs=("typing_extensions",)),
    Suite("aiostream", "0.8.1", ("tests",), needs=("pytest-asyncio", "pytest-cov")),
    # bidict 0.24.1 is not here: its sdist has no tests (and --no-binary builds its uv_build backend with cargo)
    # pytest-asyncio 1.x warns (an error here) without a loop scope; blinker pins 0.24, which wants an older pytest
    Suite("blinker", "1.9.0", ("-o", "asyncio_default_fixture_loop_scope=function", "tests"),
          needs=("pytest-asyncio",)),
    Suite("janus", "2.0.0", ("tests",), needs=("pytest-asyncio", "pytest-cov", "pytest-codspeed")),  # addopts: --cov
    Suite("simpy", "4.1.2", ("--doctest-glob=", "tests"), needs=("pytest-benchmark",)),  # as its tox.ini
    # nox's test_no_gv (no pygraphviz to build); its addopts' -x would end the run at the first difference
    Suite("transitions", "0.9.3", ("-o", "addopts=-rf", "tests"), needs=("mock", "dill", "pycodestyle")),
    # scripts its tox runs one by one (dill/tests/__main__.py); 6 modules fail to import under pytest, plain too
    Suite("dill", "0.4.1", ("--continue-on-collection-errors", "dill/tests")),
    Suite("mistune", "3.4.0", ("tests",)),
    Suite("decorator", "5.3.1", ("tests/test.py",)),  # unittest cases, one of them the doctests of documentation.py
    # its filterwarnings = error makes pytest 9's warning on a generator given to parametrize a collection error
    Suite("python-dateutil", "2.9.0.post0", ("-W", "ignore::pytest.PytestRemovedIn10Warning", "tests", "docs"),
          needs=("freezegun", "hypothesis", "pytest-cov")),  # pytest-cov: its conftest adds the no_cover mark
    # 3.7 is not on the registry; no numpy/scipy/pandas (its "default" extra): their tests skip (~2 min plain)
    Suite("networkx", "3.6.1", ("networkx",)),
    Suite("tenacity", "9.2.1", ("tests",), needs=("tornado", "typeguard")),
    Suite("pluggy", "1.7.0", ("testing",)),
    Suite("structlog", "26.1.0", ("tests",),
          needs=("freezegun", "pretend", "simplejson", "pytest-asyncio", "time-machine")),
    Suite("marshmallow", "4.4.0", ("tests",), needs=("simplejson",)),
    Suite("schedule", "1.2.2", ("test_schedule.py",)),
    Suite("parso", "0.8.7", ("test",)),
    # libraries that walk objects and modules, wrap functions, or read frames
    Suite("jsonpickle", "4.1.4", ("tests",), needs=("simplejson", "numpy", "pytest-benchmark", "feedparser")),
    Suite("lark", "1.3.1", ("tests",), needs=("regex", "interegular")),
    Suite("freezegun", "1.5.5", ("tests",), needs=("python-dateutil",)),
    Suite("pyrsistent", "0.20.0", ("tests",), needs=("hypothesis",)),
    Suite("wrapt", "2.5.2", ("tests",)),
    Suite("python-box", "7.4.1", ("test",), needs=("ruamel.yaml", "toml", "msgpack", "tomli-w")),
    # libraries that read frames, bytecode, source and ASTs, or lean on descriptors, __getattr__ and caches
    # (icecream 2.2.0 and rich 15.0.0 are not here: their sdists have no tests)
    Suite("executing", "2.3.0", ("tests",), needs=("asttokens", "littleutils", "rich", "ipython", "pysource-minimize")),
    Suite("asttokens", "3.0.2", ("tests",), needs=("astroid",)),
    Suite("pure-eval", "0.2.4", ("tests",)),
    Suite("varname", "1.0.0", ("tests",), needs=("asttokens", "pure-eval", "pytest-cov")),
    # its 2 tests in tests/mypy fail plain too: they run `mypy` from PATH, which lacks the venv's bin
    Suite("typeguard", "4.6.0", ("tests",), needs=("mypy",)),
    # the sdist lacks the .github/ and website/ scripts that 7 test modules read
    Suite("omegaconf", "2.4.0", ("--ignore-glob=tests/test_dependency_audit*", "--ignore-glob=tests/test_website_*",
                                 "tests"), needs=("attrs", "pytest-mock", "pytest-benchmark", "typing_extensions")),
    Suite("jinja2", "3.1.6", ("tests",), needs=("trio",)),
    Suite("click", "8.5.1", ("tests",)),
    # its [tool.pytest] table only sets benchmark options; the preconf tests import every serializer (~6 min plain)
    Suite("cattrs", "26.2.1", ("tests",), needs=("hypothesis", "immutables", "pytest-benchmark", "msgspec", "pyyaml",
                                                 "pymongo", "ujson", "orjson", "msgpack", "tomlkit", "cbor2")),
    Suite("inflect", "7.6.0", ("inflect", "tests"), needs=("pygments",)),
    # libraries that pickle code by value, parse and render text, or build modules and classes at run time
    # cloudpickle's sdist has no tests (--source cloudpickle=GIT_DIR; its tox.ini's addopts -s: 3 tests pickle
    # sys.stdout), and its [tool.flit.metadata] table needs flit_core<4 to build; the pythonpath is tox's (the
    # _cloudpickle_testpkg its tests import)
    Suite("cloudpickle", "3.1.2", ("-o", "pythonpath=tests/cloudpickle_testpkg", "tests"),
          needs=("psutil", "tornado", "numpy"), upstream=("tests", "tox.ini"), tag="v3.1.2", build=("flit_core<4",)),
    Suite("packaging", "26.3", ("tests",), needs=("hypothesis", "pretend", "tomli_w")),
    # its test_legacy.py sets simplefilter("error") at import, for the whole collection: collected last (its
    # developers run unittest), else test_md_in_html.py's TestSuite warning is a collection error
    Suite("markdown", "3.11.3", ("tests/test_syntax", "tests/test_apis.py", "tests/test_extensions.py",
                                 "tests/test_meta.py", "tests/test_legacy.py"), needs=("pyyaml",)),
    Suite("tabulate", "0.10.0", ("--doctest-modules", "--ignore=benchmark", "tabulate", "test"),
          needs=("wcwidth", "numpy")),  # as its tox.ini (no pandas: those tests skip)
    # its [tool.pytest] table (pytest 9's) is not one find_config reads: its addopts and filterwarnings given here
    Suite("humanize", "4.17.0", ("--doctest-modules", "-W", "error", "src", "tests"),
          needs=("freezegun", "pytest-codspeed")),
    # its tests/test_complexity.py times glob() with big-O (marked flaky): a fit now and then fails, plain too
    Suite("zipp", "4.1.2", ("zipp", "tests"), needs=("jaraco.itertools", "jaraco.functools", "more_itertools",
                                                     "big-O", "pytest-ignore-flaky", "jaraco.test")),
    Suite("six", "1.17.0", ("test_six.py",)),
    # jmespath 1.1.0 is not here: its sdist's tests lack __init__.py and compliance/ (and no upstream tag 1.1.0)
    Suite("inflection", "0.5.1", ("test_inflection.py",)),
    # as its noxfile's default session (generic, memory and dbm, no time_intensive); the memcached, redis and
    # valkey backends' tests need servers
    Suite("dogpile.cache", "1.5.0", ("-m", "not time_intensive", "--ignore=tests/cache/test_memcached_backend.py",
                                     "--ignore-glob=tests/cache/test_[rv]*_backend.py", "tests"), needs=("mako",)),
    # its test extra less PySide6 (the Qt tests skip) and the jobstores that need a server (their tests deselected:
    # pytest 9's importorskip errors on the ImportError their modules raise); pytz 2026 renamed the _offset it reads
    Suite("apscheduler", "3.11.3", ("-k", "not mongodb and not redis and not rethinkdb and not zookeeper and not etcd",
                                    "tests"),
          needs=("pytz<2026", "anyio", "sqlalchemy", "tornado", "gevent", "twisted")),
    # its CI's `pytest` from the root (addopts: --doctest-modules, --doctest-glob=*.md), less xdist and coverage;
    # the diagram tests that run graphviz's `dot` skip (~2 min plain)
    Suite("python-statemachine", "3.2.2", (".",),
          needs=("pytest-asyncio", "pytest-mock", "pytest-benchmark", "pytest-django", "django", "pydot", "pyyaml",
                 "jsonschema", "sphinx")),
]}
CONFIGS = {"pytest.ini": "", "pyproject.toml": "[tool.pytest.ini_options]", "tox.ini": "[pytest]",
           "setup.cfg": "[tool:pytest]"}  # pytest's own order


def sh(*cmd: str | Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


# --------------------------------------------------------------------------- setting up

def unpack(suite: Suite, work: Path, source: Path | None) -> Path:
    """The unpacked sdist (reused when there), completed from *source* where it lacks the tests."""
    root, cache = work / suite.name, work / "cache"
    if not root.is_dir():
        sh(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
           f"{suite.name}=={suite.version}", "-d", cache, env=_build_env(suite, work))
        stem = re.sub(r"[-_.]+", "[-_.]", suite.name) + re.escape(f"-{suite.version}.tar.gz")
        archive = next((p for p in cache.iterdir() if re.fullmatch(stem, p.name, re.I)), None)
        if archive is None:
            raise FileNotFoundError(f"no sdist {suite.name}-{suite.version}.tar.gz in {cache}")
        with tarfile.open(archive) as tar:
            top = tar.getnames()[0].split("/")[0]
            tar.extractall(work, filter="data")
        (work / top).rename(root)
    for rel in [p for p in suite.upstream if not (root / p).exists()]:
        if source is None:
            raise FileNotFoundError(f"the sdist has no {rel}: pass --source {suite.name}=CHECKOUT_OR_GIT_DIR")
        if (source / rel).is_dir():
            shutil.copytree(source / rel, root / rel)
        elif (source / rel).is_file():
            shutil.copy2(source / rel, root / rel)
        else:  # a (bare) git dir
            tree = sh("git", "--git-dir", source, "archive", suite.tag, rel, capture_output=True).stdout
            sh("tar", "-x", "-C", root, input=tree)
    return root


def plugin_tree(rev: str | None, work: Path) -> tuple[Path, str]:
    """The aliascheck tree to install (this working tree, or a snapshot of *rev*) and its label."""
    def git(*cmd: str) -> str:
        return sh("git", "-C", ROOT, *cmd, capture_output=True, text=True).stdout.strip()

    if rev is None:
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", "aliascheck", "plugins")
        return ROOT, f"{git('rev-parse', '--short', 'HEAD')} + working tree" + (" (modified)" if dirty else "")
    commit = git("rev-parse", "--short", f"{rev}^{{commit}}")
    tree = work / f"aliascheck-{commit}"
    if not tree.is_dir():
        tree.mkdir(parents=True)
        sh("tar", "-x", "-C", tree, input=sh("git", "-C", ROOT, "archive", commit, capture_output=True).stdout)
    return tree, commit


def ensure_venv(suite: Suite, root: Path, work: Path, plugin: Path, reinstall: bool) -> Path:
    venv = work / f"venv-{suite.name}"
    py, stamp, constraints = venv / "bin" / "python", venv / ".differential-stamp", ROOT / "constraints.txt"
    key = json.dumps([str(plugin), str(root), suite.needs, suite.build, constraints.read_text()])
    if not reinstall and py.exists() and stamp.is_file() and stamp.read_text() == key:
        return py
    print(f"  installing into {venv}", flush=True)
    sh(sys.executable, "-m", "venv", "--clear", venv)
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", constraints]
    sh(*pip, "-e", plugin, "pytest", "pytest-timeout", *suite.needs)
    # last, so the library's code is the unpacked tree (even where a dependency needs it)
    sh(*pip, "-e", root, env=_build_env(suite, work))
    stamp.write_text(key)
    return py


def _build_env(suite: Suite, work: Path) -> dict[str, str] | None:
    """The environment for pip steps that build the library: its build constraints as PIP_CONSTRAINT (pip's
    isolated build environment reads only that), or None (inherited)."""
    if not suite.build:
        return None
    work.mkdir(parents=True, exist_ok=True)
    build = work / f"build-{suite.name}.txt"
    build.write_text("\n".join(suite.build) + "\n")
    return {**os.environ, "PIP_CONSTRAINT": str(build)}


def find_config(root: Path) -> Path | None:
    """The config pytest would pick in *root*: given with -c, so no checkout around it leaks in."""
    for name, section in CONFIGS.items():
        if (root / name).is_file() and section in (root / name).read_text(errors="replace"):
            return root / name
    return None


# --------------------------------------------------------------------------- running

@dataclasses.dataclass
class Run:
    wall: float
    hung: str  # where the run was when --suite-timeout ended it; "" when it finished
    done: int  # tests finished when it was ended (from -q's progress characters)
    outcomes: dict[str, str]  # test id -> passed / failed / error / skipped / xfail
    messages: dict[str, str]  # test id -> its failure's first lines and where it was raised
    log: str


def outcome(case: ET.Element) -> tuple[str, str]:
    result, message = "passed", ""
    for child in case:
        if child.tag in ("failure", "error"):  # several: failed subtests
            result = "failed" if child.tag == "failure" or result == "failed" else "error"
            head = [ln.rstrip() for ln in (child.get("message") or "").splitlines() if ln.strip()][:2]
            where = [ln for ln in (child.text or "").splitlines() if re.match(r"\S+:\d+: \w", ln)][-1:]
            message = message or "\n".join(head + [w for w in where if w not in head])
        elif child.tag == "skipped" and result == "passed":
            result = "xfail" if child.get("type") == "pytest.xfail" else "skipped"
    return result, message


def parse_junit(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    outcomes, messages = {}, {}
    for case in ET.parse(path).iter("testcase") if path.is_file() else ():
        tid = f"{case.get('classname', '')}::{case.get('name', '')}".replace("::::", "::")
        outcomes[tid], messages[tid] = outcome(case)
    return outcomes, {t: m for t, m in messages.items() if m}


def stuck_at(log: str, root: Path) -> tuple[str, int]:
    """Where the main thread was in the suite's files (faulthandler's dump: outermost <- innermost), and
    how many tests had finished (-q's progress characters before the dump)."""
    before, _, dump = log.partition("Fatal Python error")
    done = sum(len(re.match(r"[.FEsxX]*", line).group()) for line in before.splitlines())
    stack = re.search(r"^Current thread .*\n((?:  File .*\n|  \.\.\.\n?)+)", dump, re.M)
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', stack.group(1) if stack else "")
    ours = [f"{os.path.relpath(f, root)}:{n} in {fn}" for f, n, fn in frames if f.startswith(f"{root}{os.sep}")]
    cut = " (the stack is cut)" if stack and stack.group(1).rstrip().endswith("...") else ""
    return (f"{ours[-1]} <- {ours[0]}{cut}" if ours else "no frame of the suite's own"), done


def run_pytest(py: Path, root: Path, label: str, args: list[str], out: Path, suite_timeout: float) -> Run:
    junit, log = out / f"{label}.xml", out / f"{label}.log"
    junit.unlink(missing_ok=True)
    cmd = [str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--color=no", f"--junitxml={junit}",
           "-o", "junit_family=xunit2", *args]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH")}
    env["ALIASCHECK_CACHE_DIR"] = str(out / "markcache")  # the suite's own: emptied before its first run
    print(f"  {label}: {' '.join(cmd[3:])}", flush=True)
    start, hung = time.monotonic(), False
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
        try:
            proc.wait(suite_timeout)
        except subprocess.TimeoutExpired:
            hung = True
            proc.send_signal(signal.SIGABRT)  # pytest's faulthandler dumps every thread's stack
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(15)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # with whatever the run started
            proc.wait()
    wall, text = time.monotonic() - start, log.read_text(errors="replace")
    where, done = stuck_at(text, root) if hung else ("", 0)
    tail = [ln for ln in text.splitlines() if ln.strip()][-1:] or [""]
    print(f"  {label}: {wall:.1f}s, " + (f"HUNG at {where}" if hung else tail[0][:150]), flush=True)
    return Run(wall, where, done, *parse_junit(junit), text)


# --------------------------------------------------------------------------- comparing

def compare(suite: Suite, plain: list[Run], checked: list[Run]) -> dict:
    def seen(runs: list[Run], tid: str) -> str:  # "passed", or "failed/passed" when repeats disagree
        return "/".join(sorted({r.outcomes.get(tid, "missing") for r in runs}))

    tests = sorted(set().union(*(r.outcomes for r in plain + checked)))
    order = next((list(r.outcomes) for r in plain + checked if r.outcomes), [])  # JUnit XML: run order
    hung = [f"{order[r.done] if r.done < len(order) else '?'}, at {r.hung}" for r in checked + plain if r.hung]
    diffs = [] if hung else [  # a killed run writes no JUnit XML: then its hang is the one difference
        {"test": t, "plain": seen(plain, t), "aliascheck": seen(checked, t),
         "message": next((r.messages[t] for r in checked if t in r.messages), "")}
        for t in tests if seen(plain, t) != seen(checked, t)]
    summary = re.findall(r"^aliascheck: \d+ tests, .*checked: (.*)$", checked[0].log, re.M)
    # The first --aliascheck run marks every module; later ones read the marked code from the cache,
    # as a user's every run after the first does. Plain runs read pytest's and Python's compiled files.
    plain_s = statistics.median(r.wall for r in plain)
    checked_s = statistics.median(r.wall for r in checked[1:] or checked)
    return {
        "suite": suite.name, "version": suite.version, "tests": len(tests), "differ": len(diffs), "hung": hung,
        "findings": summary[-1] if summary else "no summary line", "diffs": diffs,
        "internalerrors": sum(len(re.findall(r"^INTERNALERROR", r.log, re.M)) for r in checked),
        "flaky_plain": [t for t in tests if "/" in seen(plain, t)],
        "plain_s": round(plain_s, 1), "aliascheck_s": round(checked_s, 1),
        "ratio": None if hung else round(checked_s / plain_s, 2),  # a killed run's time says nothing
        "first_s": round(checked[0].wall, 1), "first_ratio": None if hung else round(checked[0].wall / plain_s, 2),
    }


def markdown(results: list[dict], label: str) -> str:
    rows = [f"{time.strftime('%Y-%m-%d')}, aliascheck {label}", "",
            "| suite | version | tests | outcomes that differ | aliascheck findings | plain s | aliascheck s | ratio "
            "| first run s (marking) | ratio |",
            "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    notes = []
    for r in results:
        if "error" in r:
            rows.append(f"| {r['suite']} | {r['version']} | | not run: {r['error']} | | | | | | |")
            continue
        differ = f"HANG in {'; '.join(r['hung'])}" if r["hung"] else str(r["differ"])
        differ += f", {r['internalerrors']} INTERNALERROR" if r["internalerrors"] else ""
        rows.append(f"| {r['suite']} | {r['version']} | {r['tests']} | {differ} | {r['findings']} | "
                    f"{r['plain_s']} | {r['aliascheck_s']} | {r['ratio'] or ''} | {r['first_s']} | "
                    f"{r['first_ratio'] or ''} |")
        for d in r["diffs"]:
            notes.append(f"* {r['suite']}: `{d['test']}`: {d['plain']} -> {d['aliascheck']}")
            notes += [f"      {ln}" for ln in d["message"].splitlines()]
        if r["flaky_plain"]:
            notes.append(f"* {r['suite']}: outcomes differ between plain runs: {', '.join(r['flaky_plain'])}")
    return "\n".join(rows + (["", "## Differences", "", *notes] if notes else [])) + "\n"


# --------------------------------------------------------------------------- main

def run_suite(suite: Suite, args: argparse.Namespace) -> dict:
    root = unpack(suite, args.work, args.sources.get(suite.name))
    py = ensure_venv(suite, root, args.work, args.plugin, args.reinstall)
    config = find_config(root) or args.work / "blank.ini"
    base = ["-c", str(config), f"--rootdir={root}", f"--timeout={args.timeout}",
            *[f"--deselect={d}" for d in args.deselect], *suite.targets]
    out = args.out / suite.name
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "markcache", ignore_errors=True)  # the first run marks every module, later ones read them
    plain, checked = [], []
    for i in range(1, args.repeat + 1):
        plain.append(run_pytest(py, root, f"plain-{i}", ["-p", "no:aliascheck", *base], out, args.suite_timeout))
        checked.append(run_pytest(py, root, f"aliascheck-{i}", ["--aliascheck", *base], out, args.suite_timeout))
    return compare(suite, plain, checked)


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suites", nargs="*", metavar="SUITE", help=f"default: all of {', '.join(SUITES)}")
    ap.add_argument("--list", action="store_true", help="list the suites and exit")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each suite, plain and under --aliascheck (the first --aliascheck run marks, "
                         "the others read the marked code: their median is the ratio)")
    ap.add_argument("--suite-timeout", type=float, default=900, help="seconds for one pytest run, then a hang")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per test (pytest-timeout)")
    ap.add_argument("--out", type=Path, default=HERE / ".diff" / "out", help="summary.md/.json, logs, JUnit XML")
    ap.add_argument("--work", type=Path, default=HERE / ".diff", help="sdists, unpacked trees, venvs")
    ap.add_argument("--rev", help="test aliascheck as of this commit (a snapshot) instead of the working tree")
    ap.add_argument("--source", action="append", default=[], metavar="NAME=DIR",
                    help="an upstream checkout or git dir with what the sdist lacks (sortedcontainers' tests)")
    ap.add_argument("--deselect", action="append", default=[], metavar="NODEID", help="for every run")
    ap.add_argument("--reinstall", action="store_true", help="unpack and install afresh")
    ap.add_argument("--keep-going", action="store_true", help="go on after a suite that differs, hangs or fails")
    args = ap.parse_args(argv)
    args.sources = {k: Path(v).resolve() for k, _, v in (s.partition("=") for s in args.source)}
    args.work, args.out = args.work.resolve(), args.out.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    unknown = [n for n in args.suites + list(args.sources) if n not in SUITES]
    if unknown or args.repeat < 1 or any("=" not in s for s in args.source):
        problem = f"unknown suite {', '.join(unknown)}; known: {' '.join(SUITES)}" if unknown else \
            "--repeat takes N >= 1 and --source NAME=DIR"
        print(f"differential.py: error: {problem}", file=sys.stderr)
        return 2
    if args.list:
        for s in SUITES.values():
            print(f"{s.name:17} {s.version:8} pytest {' '.join(s.targets)}" + " (tests: --source)" * bool(s.upstream))
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "blank.ini").write_text("[pytest]\n")
    args.plugin, label = plugin_tree(args.rev, args.work)
    results = []
    for name in args.suites or list(SUITES):
        print(f"== {name}", flush=True)
        if args.reinstall:
            shutil.rmtree(args.work / name, ignore_errors=True)
        try:
            results.append(run_suite(SUITES[name], args))
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"== {name}: cannot set up: {exc}", flush=True)
            results.append({"suite": name, "version": SUITES[name].version, "error": str(exc)})
        if ("error" in results[-1] or results[-1]["differ"] or results[-1]["hung"]) and not args.keep_going:
            break
    text = markdown(results, label)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.md").write_text(text)
    (args.out / "summary.json").write_text(json.dumps({"aliascheck": label, "results": results}, indent=2))
    print(f"\n{text}\noutputs: {args.out}")
    return int(any("error" in r or r["differ"] or r["hung"] for r in results))


if __name__ == "__main__":
    sys.exit(main())
