"""Marked code, cached: a module is marked once per source, not once per run.

A marked module's site numbers come from its path and source (:func:`aliascheck.boundary.rewrite.module_base`),
so its code is the same in every process and can be kept. It is kept apart from the interpreter's
and pytest's own compiled files (a plain run must never meet marked code), in one per-user
directory, so that read-only checkouts and ``PYTHONDONTWRITEBYTECODE`` are served too:

- ``$ALIASCHECK_CACHE_DIR``, else ``$XDG_CACHE_HOME/aliascheck/marked``, else
  ``~/.cache/aliascheck/marked``; ``ALIASCHECK_CACHE_DIR=off`` turns the cache off.
- A cache of code is a way in. The directory is made ``0700`` and used only while it is the
  user's own and nobody else can write it; an entry is used only while it is the user's own file.
- Each entry is named by a hash of what it was made from: the source, its path, the interpreter's
  magic number, aliascheck's version and the text of the modules that write marked code, and
  (for a test module) pytest's version and options. It begins with that hash again. An entry
  that does not match, cannot be read or does not hold a code object is ignored and written anew,
  never run.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import marshal
import os
import stat
import sys
import tempfile
import types
from pathlib import Path

_MAGIC = b"aliascheck-marked\n"
_OFF = ("off", "0", "no", "false")
_directory: list[Path | None] = []  # resolved once per process
_marker: list[bytes] = []
_pruned: list[bool] = []
KEEP = 4096  # entries kept: past this, the older half is let go (once per process, at its first write)


def directory() -> Path | None:
    """The cache directory, made if missing; None when it is off or not safely the user's own."""
    if _directory:
        return _directory[0]
    where = os.environ.get("ALIASCHECK_CACHE_DIR")
    if where is not None and where.strip().lower() in (*_OFF, ""):
        path = None
    else:
        if where:
            path = Path(where)
        else:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            path = Path(base) / "aliascheck" / "marked"
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            path = None
        if path is not None and not _private(path):
            path = None
    _directory.append(path)
    return path


def _private(path: Path) -> bool:
    """A real directory (not a link), the user's own, that nobody else can write into or read."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _marking() -> bytes:
    """What marked code depends on besides its source: the modules that write it and aliascheck's
    version (a development checkout changes the first without the second)."""
    if not _marker:
        from . import __version__

        here = Path(__file__).parent
        digest = hashlib.sha256(__version__.encode())
        for name in ("boundary/rewrite.py", "boundary/rules.py", "boundary/runtime.py", "kinds.py", "gate.py",
                     "markcache.py"):
            with contextlib.suppress(OSError):
                digest.update((here / name).read_bytes())
        _marker.append(digest.digest())
    return _marker[0]


def key(kind: str, path: str, source: bytes, *context: str) -> bytes:
    """The name of an entry: everything the marked code was made from."""
    digest = hashlib.sha256(_MAGIC)
    # -O and -OO compile differently (``__debug__``, asserts, docstrings): their entries are their own.
    optimize = str(sys.flags.optimize).encode()
    for part in (importlib.util.MAGIC_NUMBER, optimize, _marking(), kind.encode(),
                 path.encode(errors="surrogateescape"), "\0".join(context).encode(errors="surrogateescape")):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    digest.update(source)
    return digest.digest()


def load(entry: bytes) -> types.CodeType | None:
    """The code kept under *entry*, or None (none kept, the cache off, or an entry not to be trusted)."""
    where = directory()
    if where is None:
        return None
    try:
        fd = os.open(where / entry.hex(), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o022 or not stat.S_ISREG(st.st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    head = _MAGIC + entry
    if not data.startswith(head):
        return None
    try:
        code = marshal.loads(data[len(head):])
    except (EOFError, ValueError, TypeError):
        return None
    return code if type(code) is types.CodeType else None


def store(entry: bytes, code: types.CodeType) -> None:
    """Keep *code* under *entry* (written whole, then renamed: a reader never sees half of it)."""
    where = directory()
    if where is None:
        return
    if not _pruned:
        _pruned.append(True)
        _prune(where)
    try:
        data = _MAGIC + entry + marshal.dumps(code)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, where / entry.hex())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except (OSError, ValueError):
        return


def _prune(where: Path) -> None:
    try:
        entries = [e for e in os.scandir(where) if e.is_file(follow_symlinks=False)]
        if len(entries) <= KEEP:
            return
        entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime)
        for e in entries[: len(entries) - KEEP // 2]:
            with contextlib.suppress(OSError):
                os.unlink(e.path)
    except OSError:
        return
