"""Which session records in this process, and how each Python child of it gets a ledger of its own.

A checked session registers here when it starts (:func:`session_started`); from then on,
as coverage.py measures subprocesses:

- a **forked** child (multiprocessing's ``fork`` context, ``os.fork``, a forkserver's
  workers) swaps a fresh ledger in for the inherited one at fork; the instrumentation is
  inherited with the memory;
- an **exec**'d child (``spawn``, ``forkserver``'s server, ``subprocess`` running Python)
  is begun by the startup hook (:mod:`aliascheck.child`), which calls :func:`begin`.

Each child appends its findings to a spool file of its own as they are made
(:class:`_Writer`; the session reads them with :class:`aliascheck.spool.Spool`). Its
teardown check (:func:`finish`) runs when it exits: at ``atexit``, and after a
multiprocessing child's ``Process._bootstrap`` (which leaves through ``os._exit``).

A session is known here by what this module uses of it (:class:`Recording`), not by its
class: :mod:`aliascheck.session` imports this module.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, Protocol

import aliascheck.sites as sites

if TYPE_CHECKING:
    from .adapters import Adapters
    from .config import Options
    from .ledger import Ledger
    from .spool import Spool


class Recording(Protocol):
    """What this module uses of a :class:`~aliascheck.session.Session`."""

    ledger: Ledger
    adapters: Adapters
    spool: Spool | None
    options: Options

    def fork(self) -> None: ...

    def stop(self) -> None: ...


_session: Recording | None = None  # the session recording in this process: a test session's, or a child's
_spool_dir: str | None = None
_writer: _Writer | None = None
_fork_hook = False
_bootstrap: Any = None  # multiprocessing's BaseProcess._bootstrap, while patched
_finishing = False  # the teardown check is running: a SIGTERM now must not cut it short
_outer: list[tuple[Recording | None, str | None]] = []  # the sessions a nested one (pytester) stands in for


def current() -> Recording | None:
    """The session recording in this process, if any."""
    return _session


def session_started(session: Recording, directory: str) -> None:
    """A checked session began in this process: the children it forks get ledgers of their own."""
    global _session, _spool_dir
    _outer.append((_session, _spool_dir))  # pytester nests sessions
    _session, _spool_dir = session, directory
    _install()


def session_stopped(session: Recording) -> None:
    global _session, _spool_dir, _bootstrap
    if _session is session and _outer:
        _session, _spool_dir = _outer.pop()
    if _bootstrap is not None and _session is None:
        import multiprocessing.process as mp_process

        mp_process.BaseProcess._bootstrap = _bootstrap  # type: ignore[attr-defined,method-assign]
        _bootstrap = None


def stop_inherited() -> None:
    """This process begins a checked session of its own (a pytest run by a checked test):
    the child ledger the startup hook began ends here, its teardown check done."""
    session = _session
    if _writer is None or session is None:
        return
    finish()
    session.stop()


def finish() -> None:
    """The child's teardown check, once, as it exits: every record re-verified, then the spool closed."""
    global _session, _writer, _finishing
    session, writer = _session, _writer
    if session is None or writer is None:
        return
    _session = _writer = None
    _finishing = True
    led = session.ledger
    try:
        session.adapters.teardown(led)
        if session.options.boundary == "on":  # the boundary's keeps in this process, and what it found
            import aliascheck.boundary.runtime as boundary

            boundary.judge_all()
        led.verify_all("teardown")
        led.drain()
        stats = led.stats
        writer.line({"stats": {"handovers": stats.handovers, "checked": stats.checked, "owners": dict(stats.owners)}})
    except Exception as exc:  # never fail a child's exit; say so in the spool
        writer.line({"note": f"the teardown check failed: {type(exc).__name__}: {exc}"})
    finally:
        led.sink = None
        writer.close()


def begin(session: Recording, directory: str, test: str | None) -> bool:
    """This process is a child recording *session*: its findings go to a spool file of its own
    in *directory*, its children get ledgers, a SIGTERM runs its teardown check first.
    False (said on stderr) if the file cannot be opened: the child runs unchecked."""
    global _session, _spool_dir, _writer
    try:
        writer = _Writer(directory)
    except OSError as exc:
        sys.stderr.write(f"aliascheck: this child runs unchecked: cannot write the spool {directory}: {exc}\n")
        return False
    _session, _spool_dir, _writer = session, directory, writer
    led = session.ledger
    led.begin(test)
    led.sink = writer.write
    _install()
    _on_terminate()
    return True


def _on_terminate() -> None:
    """A child ended by SIGTERM (``Pool.terminate()``, which leaving ``with Pool(...)`` does)
    runs its teardown check first, then dies of the signal as it would have. Only where
    SIGTERM still has its default action: a handler of the user's own is left alone.

    The handler runs in the main thread between two of its instructions, maybe inside a section of
    aliascheck's that holds a lock the check takes again: aliascheck's locks are reentrant, so the
    check goes on (a plain lock left a Pool worker waiting forever, and ``terminate()`` joining it)."""
    import signal

    def finish_then_die(signum: int, frame: Any) -> None:
        if _finishing:  # it is exiting already, and the check it interrupted has to complete
            return
        finish()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, finish_then_die)
    except ValueError:  # not the main thread: no handler
        pass


def _forked() -> None:
    """In a forked child: a ledger of its own (the inherited one may have been mid-use by a
    thread that did not survive the fork), findings to a spool file of its own."""
    session, directory = _session, _spool_dir
    if session is None or directory is None:
        return
    global _writer
    if _writer is not None:
        _writer.abandon()  # the parent child's file handle: its own, not ours
        _writer = None
    test = session.ledger.test
    session.fork()
    if begin(session, directory, test) and not sites.inherit_frames(sys._getframe(1)):
        assert _writer is not None
        _writer.line({"once": "a child forked outside multiprocessing (os.fork) cannot tell which of the "
                              "frames it inherited will run again: their locals count as holders there"})


def _install() -> None:
    global _fork_hook, _bootstrap
    if not _fork_hook:
        os.register_at_fork(after_in_child=_forked)  # cannot be undone: _forked checks _session
        _fork_hook = True
    if _bootstrap is None:
        import multiprocessing.process as mp_process

        original = mp_process.BaseProcess._bootstrap  # type: ignore[attr-defined]

        def _bootstrap_then_finish(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return original(self, *args, **kwargs)
            finally:
                finish()  # it leaves through os._exit, which skips atexit

        mp_process.BaseProcess._bootstrap = _bootstrap_then_finish  # type: ignore[attr-defined,method-assign]
        _bootstrap = original
        _patch_start(mp_process)


def _patch_start(mp_process: Any) -> None:
    """Note each multiprocessing child started here, so one that never writes is warned about."""
    start = mp_process.BaseProcess.start
    if getattr(start, "_aliascheck", False):
        return

    def start_and_note(self: Any) -> None:
        start(self)
        session = _session
        if session is not None and session.spool is not None:
            session.spool.started(self)

    start_and_note._aliascheck = True  # type: ignore[attr-defined]
    mp_process.BaseProcess.start = start_and_note  # type: ignore[attr-defined,method-assign]


def describe() -> str:
    """This process as a finding names it: pid, and the worker id torch or multiprocessing give it."""
    parts = [f"pid {os.getpid()}"]
    worker = sys.modules.get("torch.utils.data._utils.worker")
    info = getattr(worker, "_worker_info", None) if worker is not None else None
    if info is not None and getattr(info, "id", None) is not None:
        parts.append(f"DataLoader worker {info.id}")
    else:
        mp_process = sys.modules.get("multiprocessing.process")
        name = mp_process.current_process().name if mp_process is not None else ""
        if name and name != "MainProcess":
            parts.append(name)
    return ", ".join(parts)


class _Writer:
    """This process's spool file: one JSON line per finding, flushed as it is written."""

    def __init__(self, directory: str) -> None:
        self.pid = os.getpid()
        self.fh: Any = open(os.path.join(directory, f"{self.pid}.jsonl"), "a", encoding="utf-8")  # noqa: SIM115
        self.line({"hello": describe()})

    def write(self, findings: list[Any]) -> None:
        if os.getpid() != self.pid:
            return
        where = describe()
        for finding in findings:
            data = finding.to_json()
            data["process"] = where
            self.line({"finding": data})

    def line(self, entry: dict[str, Any]) -> None:
        try:
            self.fh.write(json.dumps(entry, default=str) + "\n")
            self.fh.flush()
        except (OSError, ValueError):
            pass  # the spool went away: the session warns about what it could not read

    def close(self) -> None:
        try:
            self.fh.close()
        except OSError:
            pass

    def abandon(self) -> None:
        """Forget the file without flushing: after a fork the buffer is the parent's to write."""
        self.fh = None
