"""``pytest corpus/``: one test item per entry variant, asserting the verdict its entry.toml expects.

Each item runs its variant in a child process of its own (``python -m aliascheck.corpus_child``),
so ``pytest -n auto corpus/`` spreads the corpus over pytest-xdist workers, on this machine or
on several (xdist's ``--tx``). ``aliascheck corpus run -n N`` is faster on one machine: a family's
variants share a child there, and pay their imports once. A variant with a known detection gap
is a strict xfail: it fails once the gap closes, so that the marker is removed.
"""

from __future__ import annotations

from typing import Any

import pytest

from aliascheck import corpus


def pytest_collect_file(file_path: Any, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == "entry.toml":
        return EntryFile.from_parent(parent, path=file_path)
    return None


def pytest_ignore_collect(collection_path: Any) -> bool | None:
    # The variants are scripts run by the child process; never import them as test modules.
    return True if collection_path.suffix == ".py" and collection_path.name != "conftest.py" else None


class EntryFile(pytest.File):
    def collect(self) -> Any:
        try:
            entry = corpus.load_entry(self.path.parent)
        except corpus.CorpusError as exc:
            raise self.CollectError(str(exc)) from None
        for variant in entry.variants.values():
            yield VariantItem.from_parent(self, name=variant.name, entry=entry, variant=variant)


class VerdictMismatch(Exception):
    """The variant's verdict is not the one its entry expects."""


class VariantItem(pytest.Item):
    def __init__(self, *, entry: corpus.Entry, variant: corpus.Variant, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry, self.variant = entry, variant
        if variant.expect.gap:
            self.add_marker(pytest.mark.xfail(reason=f"known gap: {variant.expect.gap}", strict=True))

    def runtest(self) -> None:
        result = corpus.run_one(self.entry, self.variant)
        if result.got == "skip":
            pytest.skip(result.detail)
        self.user_properties.append(("verdict", result.got))
        if result.status in ("mismatch", "gap"):
            raise VerdictMismatch(_describe(result))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, VerdictMismatch):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.entry.id}::{self.variant.name}"


def _describe(result: corpus.Result) -> str:
    lines = [f"{result.entry} {result.variant}: expected {result.expected} {result.pattern}".rstrip(),
             f"got {result.got}" + (f": {result.detail}" if result.detail else "")]
    if result.threads:
        lines.append(f"left running: {', '.join(result.threads)}")
    lines += [f"  [{f['kind']}] {f['owner']} {f['path']}  {f['before']} -> {f['after']}" for f in result.findings]
    return "\n".join(lines)
