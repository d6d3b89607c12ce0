"""Findings from child processes: the spool a session owns, and what it has read of it.

A checked pytest session makes a directory only its user can read (0700) and names
it, with the session's options, in :data:`ENV`; the test running now is in
:data:`TEST_ENV`. Every Python child (see :mod:`aliascheck.processes`) appends one JSON
line per finding to ``<pid>.jsonl`` there and flushes it at once, so a worker that
is killed loses nothing it had found. The session reads what is new after each
test and at the end. What crosses back is JSON data, never a pickle; a torn last
line (a child killed mid-write) is where that file ends.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from .config import Options
from .findings import Finding

if TYPE_CHECKING:
    from pathlib import Path

ENV = "ALIASCHECK_CHILD"  # JSON: {"spool": directory, "options": {...}, "plugins": [[name, "module:attr"], ...]}
TEST_ENV = "ALIASCHECK_TEST"  # the node id of the test running in the session now


def options_json(options: Options) -> dict[str, Any]:
    """What a child needs of the session's options (reports and modes stay with the session)."""
    data = asdict(options)
    for key in ("report", "sarif"):
        data[key] = None
    data["disabled_adapters"] = sorted(options.disabled_adapters)
    return data


def options_from_json(data: dict[str, Any]) -> Options:
    values = dict(data)
    values["disabled_adapters"] = frozenset(values.get("disabled_adapters", ()))
    for key in ("ignore", "allow_class_update", "stateful", "roots"):
        values[key] = tuple(values.get(key, ()))
    return Options(**values)


PREFIX = "aliascheck-spool-"  # then the creating session's pid, a dash and mkdtemp's letters


def _sweep(tmp: Path) -> list[Path]:
    """Remove the spools of sessions that ended without closing theirs (a killed or ``os._exit``-ed
    pytest): this user's, named by a process that no longer exists. Returns what was removed."""
    import shutil

    removed: list[Path] = []
    if os.name != "posix":  # os.kill(pid, 0) is no question there: it signals
        return removed
    try:
        spools = list(tmp.glob(f"{PREFIX}*-*"))
    except OSError:
        return removed
    for path in spools:
        pid = path.name[len(PREFIX):].partition("-")[0]
        try:
            if not pid.isdigit() or path.lstat().st_uid != os.getuid() or _alive(int(pid)):
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's: alive
        return True
    return True


class Spool:
    """The session's side of the spool: it sets the environment children inherit, and reads them."""

    def __init__(self, options: Options, plugins: list[tuple[str, str]]) -> None:
        import tempfile  # the session's side only: a child's start-up imports this module for ENV
        from pathlib import Path

        _sweep(Path(tempfile.gettempdir()))
        self.dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))  # mode 0700
        self.config = json.dumps({"spool": str(self.dir), "options": options_json(options), "plugins": plugins})
        self.problems: list[str] = []
        self._read: dict[str, int] = {}  # file name -> bytes consumed
        self._names: dict[int, str] = {}  # pid -> the process's name, from its first line
        # multiprocessing children this process started: pid -> (name, the Process, weakly)
        self._started: dict[int, tuple[str, Any]] = {}
        self._warned: set[int] = set()
        self._saved: dict[str, str | None] = {}
        self.handovers = self.checked = 0  # the children's counters, as they end
        self.owners: dict[str, int] = {}

    # -- the environment children inherit ----------------------------------
    def open(self) -> None:
        for key, value in ((ENV, self.config), (TEST_ENV, "")):
            self._saved[key] = os.environ.get(key)
            os.environ[key] = value

    def set_test(self, test: str | None) -> None:
        os.environ[TEST_ENV] = test or ""

    def close(self) -> None:
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved.clear()
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)

    def started(self, process: Any) -> None:
        """A multiprocessing child this process started: one that never writes a line is warned about."""
        import weakref

        pid = getattr(process, "pid", None)
        if pid is not None:
            self._started[pid] = (getattr(process, "name", ""), weakref.ref(process))

    def end_daemons(self, timeout: float) -> list[str]:
        """Terminate the daemonic multiprocessing children still running, as multiprocessing's
        exit handler would a moment later, so that their teardown checks (run on SIGTERM) reach
        the spool before the session reports. Returns their names. Non-daemonic children are
        left alone: the interpreter waits for them anyway."""
        ended = []
        for _name, ref in list(self._started.values()):
            process = ref()
            if process is None or not getattr(process, "daemon", False):
                continue
            try:
                if process.is_alive():
                    process.terminate()
                    ended.append(process)
            except (AssertionError, ValueError, OSError):  # not ours to wait for, or closed
                continue
        for process in ended:
            process.join(timeout)
        return [p.name for p in ended]

    # -- reading -----------------------------------------------------------
    def collect(self) -> list[Finding]:
        """The findings written since the last call, from every child's file."""
        found: list[Finding] = []
        try:
            files = sorted(self.dir.glob("*.jsonl"))
        except OSError as exc:
            self._problem(f"cannot list the child spool {self.dir}: {exc}")
            return found
        for path in files:
            found += self._read_file(path)
        self._missing()
        return found

    def _read_file(self, path: Path) -> list[Finding]:
        pid = int(path.stem) if path.stem.isdigit() else -1
        offset = self._read.get(path.name, 0)
        try:
            with path.open("rb") as fh:
                fh.seek(offset)
                data = fh.read()
        except OSError as exc:
            self._warn_once(pid, f"cannot read the spool of child {self._who(pid)}: {exc.strerror or exc}; "
                                 "its findings are lost, the others stand")
            return []
        end = data.rfind(b"\n") + 1  # a torn last line is not read (yet)
        self._read[path.name] = offset + end
        found = []
        for number, line in enumerate(data[:end].splitlines()):
            try:
                entry = json.loads(line)
                if "hello" in entry:
                    self._names[pid] = str(entry["hello"])
                elif "finding" in entry:
                    found.append(Finding.from_json(entry["finding"]))
                elif "stats" in entry:
                    stats = entry["stats"]
                    self.handovers += int(stats["handovers"])
                    self.checked += int(stats["checked"])
                    for owner, n in dict(stats["owners"]).items():
                        self.owners[owner] = self.owners.get(owner, 0) + int(n)
                elif "once" in entry:  # said once in the summary, whichever children say it
                    self._problem(str(entry["once"]))
                elif "note" in entry:
                    self._problem(f"child {self._who(pid)}: {entry['note']}")
            except (ValueError, TypeError, KeyError) as exc:
                self._problem(f"unreadable line {number + 1} in the spool of child {self._who(pid)}: {exc}")
        return found

    def _missing(self) -> None:
        """A multiprocessing child that ended without ever writing: it ran without aliascheck."""
        for pid, (name, ref) in list(self._started.items()):
            process = ref()
            if process is not None and getattr(process, "_popen", None) is not None and process.exitcode is None:
                continue  # still running
            del self._started[pid]
            if not (self.dir / f"{pid}.jsonl").exists():
                self._warn_once(pid, f"child pid {pid} ({name}) left no spool: it ran without aliascheck "
                                     "(another interpreter, or one that cannot import aliascheck); "
                                     "its handovers were not checked")

    def _who(self, pid: int) -> str:
        name = self._names.get(pid) or (self._started.get(pid, ("",))[0])
        return f"pid {pid}" + (f" ({name})" if name else "")

    def _warn_once(self, pid: int, text: str) -> None:
        if pid not in self._warned:
            self._warned.add(pid)
            self._problem(text)

    def _problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)
