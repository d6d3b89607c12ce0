#!/usr/bin/env python3
"""Run peer projects' own test suites plain and under ``pytest --aliascheck``.

For each peer suite this script

1. gets the suite's test files at the upstream tag: by default
   ``git clone --depth 1 --branch TAG URL`` into the cache dir (``peers/.cache``); with
   ``--source NAME=DIR`` from an existing checkout, a bare git dir (``git archive TAG``), or a
   plain folder holding the test files (for torch, whose repository is too large to clone here).
   The suites are never copied into this repository;
2. installs what the suite needs into its own venv ``peers/.venv-NAME``, always with
   ``-c constraints.txt`` (which pins torch, so no unpinned torch is ever pulled), then
   ``pip install -e`` the aliascheck checkout so the plugin under test is this one;
3. runs the suite plain and under ``--aliascheck`` (``--repeat N`` times each; one pytest process
   at a time, ``-p no:cacheprovider -q`` and a per-test ``--timeout``, never ``-x``), plus any
   extra variant a suite defines (Lightning's ``--aliascheck-discover all``);
4. prints, per suite: passed/failed/skipped plain and under aliascheck, the aliascheck findings
   (bug gists from the ``--aliascheck-report`` JSON, or else the "aliascheck: bugs" section),
   tests that fail only under --aliascheck with their failure's first lines, whether the
   aliascheck verdicts were the same across repeats, and the wall ratio (median aliascheck /
   median plain).

Usage (from anywhere; paths default to this checkout)::

    python peers/run_peers.py                                # all suites, sources by git clone
    python peers/run_peers.py torchdata torch --repeat 3
    python peers/run_peers.py torchdata --source torchdata=/path/to/pytorch-data.git
    python peers/run_peers.py torch --source torch=/tmp/torch-tests    # holds test/optim/*.py
    python peers/run_peers.py --list                         # the suites and their tags

Exit status: 0 when every suite ran (whatever it found), 1 when a suite could not be set up or
run, 2 on bad arguments. Per-run logs, JUnit XML and JSON reports go under ``--out``
(default ``peers/.out``), and a machine-readable ``summary.json`` beside them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # the aliascheck checkout


@dataclasses.dataclass
class Suite:
    name: str
    url: str
    tag: str
    paths: list[str]  # test files / folders, relative to the repository root
    requirements: list[str]  # pip requirement specifiers for the suite's venv
    deselect: list[str] = dataclasses.field(default_factory=list)  # pytest node ids, relative to rootdir
    ignore: list[str] = dataclasses.field(default_factory=list)  # --ignore paths
    extra_args: list[str] = dataclasses.field(default_factory=list)  # for every run of the suite
    isolate: bool = False  # run from a temp dir holding only the test files (flat)
    rootdir: str = "."  # where pytest runs, relative to the repository root
    pythonpath: list[str] = dataclasses.field(default_factory=list)  # relative to the repository root
    variants: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # extra aliascheck runs
    optional: bool = False  # skip (not fail) when its install is impossible
    config: str | None = None  # the upstream pytest config file (relative), used with -c; else a blank one
    note: str = ""


# Process-worker tests of torchdata.nodes are slow (forkserver) but do not hang here, so nothing
# is deselected by default; add --deselect torchdata=NODEID if they hang on your machine.
LIGHTNING_CALLBACKS = [
    "tests/tests_pytorch/callbacks/test_early_stopping.py",
    "tests/tests_pytorch/callbacks/test_lr_monitor.py",
    "tests/tests_pytorch/callbacks/test_stochastic_weight_avg.py",
    "tests/tests_pytorch/callbacks/test_finetuning_callback.py",
    "tests/tests_pytorch/callbacks/test_timer.py",
    "tests/tests_pytorch/callbacks/test_lambda_function.py",
]

SUITES: dict[str, Suite] = {
    s.name: s
    for s in [
        Suite(
            name="torchdata",
            url="https://github.com/pytorch/data.git",
            tag="v0.11.0",
            paths=["test/nodes", "test/stateful_dataloader/test_state_dict.py"],
            requirements=["torch", "torchdata=={version}", "numpy", "expecttest", "parameterized", "psutil"],
            pythonpath=["test"],
        ),
        Suite(
            name="torch",
            url="https://github.com/pytorch/pytorch.git",
            tag="v2.13.0",
            paths=["test/optim/test_lrscheduler.py", "test/optim/test_swa_utils.py"],
            requirements=["torch", "numpy", "expecttest"],
            isolate=True,
            note="only the CyclicLR load_state_dict bug is expected to be flagged",
        ),
        Suite(
            name="torchmetrics",
            url="https://github.com/Lightning-AI/torchmetrics.git",
            tag="v1.9.0",
            paths=["tests/unittests/bases"],
            requirements=["torch", "torchmetrics=={version}", "numpy", "scikit-learn", "scipy", "pandas",
                          "cloudpickle", "psutil", "cachier", "pytest-rerunfailures", "pytest-doctestplus",
                          "lightning-utilities", "packaging"],
            config="pyproject.toml",
            rootdir="tests",
            pythonpath=["tests"],
            optional=True,
        ),
        Suite(
            name="lightning",
            url="https://github.com/Lightning-AI/pytorch-lightning.git",
            tag="2.6.0",  # resolved to the newest 2.6.x tag the source has (see resolve_tag)
            paths=["tests/tests_pytorch/checkpointing", *LIGHTNING_CALLBACKS],
            ignore=["tests/tests_pytorch/checkpointing/test_legacy_checkpoints.py"],
            requirements=["torch", "lightning=={version}", "pytorch-lightning=={version}", "numpy", "cloudpickle",
                          "psutil", "pandas", "scikit-learn", "tensorboardX", "pytest-rerunfailures",
                          "jsonargparse[signatures]>=4.39,<4.46", "omegaconf>=2.2.3,<2.4", "rich"],
            config="pyproject.toml",
            rootdir="tests",
            pythonpath=["tests"],
            variants={"discover-all": ["--aliascheck-discover", "all"]},
            optional=True,
        ),
    ]
}


# --------------------------------------------------------------------------- sources

def git(*args: str, cwd: Path | None = None, capture: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, check=True, text=True,
                          stdout=subprocess.PIPE if capture else None)
    return proc.stdout if capture else ""


def is_bare(d: Path) -> bool:
    """A git directory without a work tree (``git clone --bare``, or a mirror without a config file)."""
    if not (d / "HEAD").is_file() or not (d / "objects").is_dir() or not (d / "refs").is_dir():
        return False
    try:
        git("--git-dir", str(d), "rev-parse", "--git-dir")
    except subprocess.CalledProcessError:
        return False
    return True


def resolve_tag(suite: Suite, tags: list[str]) -> str:
    """The suite's tag; for Lightning, the newest 2.6.x release tag available."""
    if suite.name == "lightning":
        six = [t for t in tags if re.fullmatch(r"2\.6\.\d+", t)]
        if six:
            return max(six, key=lambda t: int(t.rsplit(".", 1)[1]))
    return suite.tag


def get_source(suite: Suite, source: Path | None, cache: Path) -> tuple[Path, str]:
    """A directory laid out as the repository root (at least the suite's paths), and the tag used."""
    if source is None:
        tag = suite.tag
        if suite.name == "lightning":
            out = git("ls-remote", "--tags", suite.url)
            tag = resolve_tag(suite, [ln.split("refs/tags/")[1].removesuffix("^{}") for ln in out.splitlines()])
        dest = cache / f"{suite.name}-{tag}"
        if not dest.exists():
            print(f"[{suite.name}] cloning {suite.url} at {tag}", flush=True)
            git("clone", "--quiet", "--depth", "1", "--branch", tag, suite.url, str(dest), capture=False)
        return dest, tag
    source = source.resolve()
    if is_bare(source):
        tag = resolve_tag(suite, git("--git-dir", str(source), "tag").split())
        dest = cache / f"{suite.name}-{tag}"
        if not dest.exists():
            print(f"[{suite.name}] extracting {tag} from bare repository {source}", flush=True)
            tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{suite.name}-"))
            wanted = sorted({p.split("/")[0] for p in suite.paths})  # whole top folders: conftests, helpers
            if suite.config:
                wanted.append(suite.config)
            archive = subprocess.run(["git", "--git-dir", str(source), "archive", tag, "--", *wanted],
                                     check=True, stdout=subprocess.PIPE).stdout
            subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
            tmp.rename(dest)
        return dest, tag
    # a checkout, or a folder with just the test files (at their repository paths or flat)
    return source, f"{suite.tag} (as found in {source})"


def locate(root: Path, rel: str) -> Path:
    p = root / rel
    if p.exists():
        return p
    flat = root / Path(rel).name
    if flat.exists():
        return flat
    raise FileNotFoundError(f"{rel} not found under {root}")


# --------------------------------------------------------------------------- venvs

def constraints_file(path: Path) -> Path:
    text = path.read_text()
    if not re.search(r"^torch\s*==", text, re.M):
        raise SystemExit(f"{path} does not pin torch: refusing to install (an unpinned torch is a huge CUDA build)")
    return path


def ensure_venv(suite: Suite, tag: str, venvs: Path, constraints: Path, reinstall: bool) -> Path:
    venv = venvs / f".venv-{suite.name}"
    py = venv / "bin" / "python"
    version = tag.split()[0].removeprefix("v")
    reqs = [r.format(version=version) for r in suite.requirements] + ["pytest", "pytest-timeout"]
    stamp_text = json.dumps([reqs, constraints.read_text(), str(ROOT)])
    stamp = venv / ".peers-stamp"
    if not reinstall and stamp.is_file() and stamp.read_text() == stamp_text and py.exists():
        return py
    if not py.exists():
        print(f"[{suite.name}] creating {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    print(f"[{suite.name}] installing {' '.join(reqs)} (-c {constraints})", flush=True)
    pip = [str(py), "-m", "pip", "install", "-q", "-c", str(constraints)]
    subprocess.run([*pip, *reqs], check=True)
    subprocess.run([*pip, "-e", str(ROOT)], check=True)  # the plugin under test is this checkout
    stamp.write_text(stamp_text)
    return py


# --------------------------------------------------------------------------- runs

@dataclasses.dataclass
class Run:
    label: str
    wall: float
    exit: int
    outcomes: dict[str, str]  # test id -> passed / failed / error / skipped
    messages: dict[str, str]  # test id -> first lines of its failure
    bugs: list[str]  # "[kind] gist" lines
    log: str

    def count(self, what: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == what)

    @property
    def failing(self) -> set[str]:
        return {t for t, o in self.outcomes.items() if o in ("failed", "error")}

    def verdict(self) -> tuple:
        return (tuple(sorted(self.bugs)), tuple(sorted(self.failing)))


def parse_junit(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    outcomes: dict[str, str] = {}
    messages: dict[str, str] = {}
    if not path.is_file():
        return outcomes, messages
    for case in ET.parse(path).iter("testcase"):
        tid = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                # an error in teardown after a failure keeps "failed"
                outcome = "failed" if child.tag == "failure" or outcome == "failed" else "error"
                text = (child.get("message") or "") + "\n" + (child.text or "")
                lines = [ln for ln in text.splitlines() if ln.strip()]
                messages[tid] = "\n".join(lines[:4])
            elif child.tag == "skipped" and outcome == "passed":
                outcome = "skipped"
        outcomes[tid] = outcome
    return outcomes, messages


BUG_LINE = re.compile(r"^\[(\w[\w-]*)\] (.+)$")


def bugs_from_terminal(text: str) -> list[str]:
    """The "aliascheck: bugs" section's bug lines (used when no JSON report was written)."""
    out, inside = [], False
    for line in text.splitlines():
        if re.match(r"^-+ aliascheck: bugs -+$", line):
            inside = True
            continue
        if inside:
            if re.match(r"^[-=]{3,} ", line):
                break
            m = BUG_LINE.match(line)
            if m:
                out.append(line)
    return out


def bugs_from_report(path: Path) -> list[str] | None:
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return [f"[{b['kind']}] {b['gist']}" for b in data.get("bugs", []) if b.get("severity") != "info"]


def run_pytest(py: Path, suite: Suite, workdir: Path, targets: list[str], args: list[str], label: str,
               out: Path, timeout: int, suite_timeout: int) -> Run:
    out.mkdir(parents=True, exist_ok=True)
    junit, report, log = out / f"{label}.xml", out / f"{label}.json", out / f"{label}.log"
    for p in (junit, report):
        p.unlink(missing_ok=True)
    cmd = [str(py), "-m", "pytest", "-c", suite.config, f"--rootdir={workdir}", "--color=no",
           "-p", "no:cacheprovider", "-q", f"--timeout={timeout}",
           "-o", "junit_family=xunit2", f"--junitxml={junit}", *suite.extra_args, *args]
    if "--aliascheck" in args:
        cmd.append(f"--aliascheck-report={report}")
    cmd += [f"--ignore={i}" for i in suite.ignore]
    cmd += [f"--deselect={d}" for d in suite.deselect]
    cmd += targets
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    if suite.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(suite.pythonpath + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    print(f"[{suite.name}] {label}: {' '.join(cmd[1:])}", flush=True)
    start = time.monotonic()
    try:
        with open(log, "w") as fh:
            proc = subprocess.run(cmd, cwd=workdir, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                  timeout=suite_timeout, start_new_session=True)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        code = -9
    wall = time.monotonic() - start
    text = log.read_text(errors="replace")
    outcomes, messages = parse_junit(junit)
    bugs = bugs_from_report(report)
    if bugs is None:
        bugs = bugs_from_terminal(text)
    tail = [ln for ln in text.splitlines() if ln.strip()][-1:] or [""]
    print(f"[{suite.name}] {label}: exit {code}, {wall:.1f}s, {tail[0][:160]}", flush=True)
    return Run(label, wall, code, outcomes, messages, bugs, str(log))


def prepare_workdir(suite: Suite, root: Path, scratch: Path) -> tuple[Path, list[str]]:
    """Where pytest runs and the targets it is given."""
    # An explicit config: otherwise pytest could pick up an ancestor's (this checkout's) pyproject.
    config = root / suite.config if suite.config else None
    if config is None or not config.is_file():
        config = scratch / "pytest.ini"
        config.write_text("[pytest]\n")
    suite.config = str(config)
    if suite.isolate:
        work = scratch / f"{suite.name}-tests"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        targets = []
        for rel in suite.paths:
            src = locate(root, rel)
            shutil.copy2(src, work / src.name)
            targets.append(src.name)
        return work, targets
    work = (root / suite.rootdir).resolve()
    targets = [os.path.relpath(locate(root, rel), work) for rel in suite.paths]
    suite.ignore = [os.path.relpath(root / i, work) for i in suite.ignore]
    suite.deselect = [d if "::" not in d or (work / d.split("::")[0]).exists()
                      else os.path.relpath(root / d.split("::")[0], work) + "::" + d.split("::", 1)[1]
                      for d in suite.deselect]
    suite.pythonpath = [str((root / p).resolve()) for p in suite.pythonpath]
    return work, targets


def short(tid: str) -> str:
    return tid.replace("::::", "::")


def report_suite(suite: Suite, tag: str, plain: list[Run], checked: list[Run], variants: dict[str, Run]) -> dict:
    p, a = plain[0], checked[0]
    lines = [f"== {suite.name} ({tag}) ==" + (f"  [{suite.note}]" if suite.note else "")]

    def counts(r: Run) -> str:
        err = r.count("error")
        return (f"{r.count('passed')} passed, {r.count('failed')} failed, {r.count('skipped')} skipped"
                + (f", {err} errors" if err else "") + f" (exit {r.exit})")

    lines.append(f"  plain:      {counts(p)}")
    lines.append(f"  aliascheck: {counts(a)}")
    bugs = sorted({b for r in checked for b in r.bugs})
    lines.append(f"  findings ({len(bugs)}):" if bugs else "  findings: none")
    lines += [f"    {b}" for b in bugs]
    only = sorted(set().union(*(r.failing for r in checked)) - set().union(*(r.failing for r in plain)))
    lines.append(f"  failing only under --aliascheck ({len(only)}):" if only
                 else "  failing only under --aliascheck: none")
    for t in only:
        msg = next((r.messages[t] for r in checked if t in r.messages), "")
        lines.append(f"    {short(t)}")
        lines += [f"        {m[:200]}" for m in msg.splitlines()[:3]]
    stable = len({r.verdict() for r in checked}) == 1
    lines.append(f"  verdicts across {len(checked)} aliascheck run(s): {'same' if stable else 'DIFFERENT'}")
    if not stable:
        for r in checked:
            lines.append(f"    {r.label}: {len(r.bugs)} bugs, {len(r.failing)} failing")
    pm, am = statistics.median(r.wall for r in plain), statistics.median(r.wall for r in checked)
    lines.append(f"  wall: plain {pm:.1f}s, aliascheck {am:.1f}s (medians of {len(plain)}/{len(checked)}), "
                 f"ratio {am / pm:.2f}")
    vres = {}
    for name, r in variants.items():
        vonly = sorted(r.failing - set().union(*(x.failing for x in plain)))
        lines.append(f"  variant {name}: {counts(r)}, {r.wall:.1f}s, findings {len(r.bugs)}, "
                     f"failing only there {len(vonly)}")
        lines += [f"    {b}" for b in sorted(set(r.bugs) - set(bugs))]
        for t in vonly:
            lines.append(f"    {short(t)}")
            lines += [f"        {m[:200]}" for m in r.messages.get(t, "").splitlines()[:3]]
        vres[name] = {"bugs": r.bugs, "failing_only": vonly, "wall": r.wall, "log": r.log}
    print("\n".join(lines), flush=True)
    return {
        "suite": suite.name, "tag": tag,
        "plain": {k: p.count(k) for k in ("passed", "failed", "skipped", "error")},
        "aliascheck": {k: a.count(k) for k in ("passed", "failed", "skipped", "error")},
        "findings": bugs, "failing_only_under_aliascheck": only, "stable": stable,
        "wall_plain": [r.wall for r in plain], "wall_aliascheck": [r.wall for r in checked],
        "wall_ratio": am / pm, "variants": vres, "logs": [r.log for r in plain + checked],
    }


# --------------------------------------------------------------------------- main

def parse_pairs(items: list[str], what: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in SUITES:
            raise SystemExit(f"{what} wants NAME=VALUE with NAME one of {', '.join(SUITES)}: {item!r}")
        out.setdefault(name, []).append(value)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suites", nargs="*", help=f"suites to run (default all): {', '.join(SUITES)}")
    ap.add_argument("--source", action="append", default=[], metavar="NAME=DIR",
                    help="use DIR (checkout, bare git dir, or folder of test files) instead of cloning")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each suite, plain and under --aliascheck")
    ap.add_argument("--timeout", type=int, default=300, help="per-test timeout in seconds (pytest-timeout)")
    ap.add_argument("--suite-timeout", type=int, default=3600, help="timeout of one pytest run, seconds")
    ap.add_argument("--deselect", action="append", default=[], metavar="NAME=NODEID", help="extra deselects")
    ap.add_argument("--pytest-arg", action="append", default=[], metavar="NAME=ARG",
                    help="extra pytest argument for a suite's runs (e.g. torchdata=-k=not process)")
    ap.add_argument("--no-variants", action="store_true", help="skip the extra variants (discover all)")
    ap.add_argument("--constraints", type=Path, default=ROOT / "constraints.txt")
    ap.add_argument("--venvs", type=Path, default=HERE, help="where .venv-NAME go")
    ap.add_argument("--cache", type=Path, default=HERE / ".cache", help="clones and extracted sources")
    ap.add_argument("--out", type=Path, default=HERE / ".out", help="logs, JUnit XML, JSON reports")
    ap.add_argument("--reinstall", action="store_true", help="reinstall the venvs even if up to date")
    ap.add_argument("--list", action="store_true", help="list the suites and exit")
    args = ap.parse_args(argv)

    if args.list:
        for s in SUITES.values():
            print(f"{s.name:13} {s.url} @ {s.tag}: {' '.join(s.paths)}")
        return 0
    names = args.suites or list(SUITES)
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        ap.error(f"unknown suite(s) {unknown}; known: {', '.join(SUITES)}")
    sources = {k: Path(v[-1]) for k, v in parse_pairs(args.source, "--source").items()}
    deselects = parse_pairs(args.deselect, "--deselect")
    extra = parse_pairs(args.pytest_arg, "--pytest-arg")
    constraints = constraints_file(args.constraints.resolve())
    args.cache.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")

    results, status = [], 0
    for name in names:
        suite = dataclasses.replace(SUITES[name])
        suite.deselect = [*suite.deselect, *deselects.get(name, [])]
        suite.extra_args = [*suite.extra_args, *extra.get(name, [])]
        out = args.out / stamp / name
        try:
            root, tag = get_source(suite, sources.get(name), args.cache)
            py = ensure_venv(suite, tag, args.venvs, constraints, args.reinstall)
            with tempfile.TemporaryDirectory(prefix="peers-") as scratch:
                work, targets = prepare_workdir(suite, root, Path(scratch))
                plain, checked, variants = [], [], {}
                for i in range(1, args.repeat + 1):
                    plain.append(run_pytest(py, suite, work, targets, [], f"plain-{i}", out,
                                            args.timeout, args.suite_timeout))
                    checked.append(run_pytest(py, suite, work, targets, ["--aliascheck"], f"aliascheck-{i}", out,
                                              args.timeout, args.suite_timeout))
                if not args.no_variants:
                    for vname, vargs in suite.variants.items():
                        variants[vname] = run_pytest(py, suite, work, targets, ["--aliascheck", *vargs],
                                                     f"aliascheck-{vname}", out, args.timeout, args.suite_timeout)
        except (subprocess.CalledProcessError, FileNotFoundError, OSError) as exc:
            level = "SKIPPED" if suite.optional else "ERROR"
            print(f"== {name}: {level}: {exc}", flush=True)
            results.append({"suite": name, "status": level.lower(), "reason": str(exc)})
            status = status if suite.optional else 1
            continue
        if not plain[0].outcomes:
            print(f"== {name}: ERROR: pytest collected nothing; see {plain[0].log}", flush=True)
            status = 1
        results.append(report_suite(suite, tag, plain, checked, variants))
    (args.out / stamp).mkdir(parents=True, exist_ok=True)
    (args.out / stamp / "summary.json").write_text(json.dumps(results, indent=2))
    print(f"\nlogs and summary.json: {args.out / stamp}")
    return status


if __name__ == "__main__":
    sys.exit(main())
