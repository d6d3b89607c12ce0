"""One settings object, from command-line flags, ini values and the environment."""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError

MODES = ("fail", "warn")
BOUNDARY = ("on", "off")  # the project's keep sites and copies, marked at import
DISCOVER = ("project", "all", "off")  # which classes with a state protocol are watched with no configuration
ENV_DISABLE = "ALIASCHECK_DISABLE_ADAPTERS"  # comma-separated adapter names, or "all"


@dataclass(frozen=True, slots=True)
class Options:
    enabled: bool = False
    steps: int = 4
    strict: bool = False
    mode: str = "fail"
    report: str | None = None
    sarif: str | None = None
    verbose: bool = False
    ignore: tuple[str, ...] = ()
    disabled_adapters: frozenset[str] = field(default_factory=frozenset)
    step_timeout: float = 30.0
    allow_class_update: tuple[str, ...] = ()
    stateful: tuple[str, ...] = ()  # import paths of extra classes for the generic adapter
    discover: str = "project"
    roots: tuple[str, ...] = ()  # the project's directories (default: the current directory)
    boundary: str = "on"  # mark the project's keep sites at import (aliascheck.boundary.rewrite): on or off

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"--aliascheck-mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.steps < 0:
            raise UsageError(f"--aliascheck-steps must be >= 0, not {self.steps}")
        if self.discover not in DISCOVER:
            raise UsageError(f"--aliascheck-discover must be one of {', '.join(DISCOVER)}, not {self.discover!r}")
        if self.boundary not in BOUNDARY:
            raise UsageError(f"--aliascheck-boundary must be one of {', '.join(BOUNDARY)}, not {self.boundary!r}")


def _flag_or_ini(config: Any, flag: str, ini: str) -> Any:
    value = config.getoption(flag)
    return config.getini(ini) if value is None else value


def from_pytest(config: Any) -> Options:
    enabled = bool(config.getoption("aliascheck") or _truthy(config.getini("aliascheck")))
    disabled = set(filter(None, (s.strip() for s in os.environ.get(ENV_DISABLE, "").split(","))))
    disabled |= set(config.getini("aliascheck_disable"))
    try:
        steps = int(_flag_or_ini(config, "aliascheck_steps", "aliascheck_steps"))
    except ValueError as exc:
        raise UsageError(f"aliascheck_steps must be an integer: {exc}") from None
    return Options(
        enabled=enabled,
        steps=steps,
        strict=bool(config.getoption("aliascheck_strict") or _truthy(config.getini("aliascheck_strict"))),
        mode=str(_flag_or_ini(config, "aliascheck_mode", "aliascheck_mode")),
        report=config.getoption("aliascheck_report"),
        sarif=config.getoption("aliascheck_sarif"),
        verbose=bool(config.getoption("aliascheck_verbose") or _truthy(config.getini("aliascheck_verbose"))),
        ignore=tuple(config.getini("aliascheck_ignore")),
        disabled_adapters=frozenset(disabled),
        allow_class_update=tuple(config.getini("aliascheck_allow_class_update")),
        stateful=tuple(config.getini("aliascheck_stateful")),
        discover=str(_flag_or_ini(config, "aliascheck_discover", "aliascheck_discover")),
        roots=(str(config.rootpath),),
        boundary=str(_flag_or_ini(config, "aliascheck_boundary", "aliascheck_boundary")),
    )


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def match(text: str, pattern: str) -> bool:
    """The one pattern rule (ignore patterns, allowed classes, corpus expectations).

    fnmatch with ``*`` and ``?`` as wildcards and ``[`` literal, as in every path
    aliascheck prints: ``counts['a']`` matches the path ``counts['a']``.
    """
    return fnmatch.fnmatchcase(text, pattern.replace("[", "[[]"))


# -- aliascheck check PACKAGE: the factories it may use -----------------------
INI_FILES = (("pytest.ini", "pytest"), ("tox.ini", "aliascheck"), ("setup.cfg", "aliascheck"), ("tox.ini", "pytest"),
             ("setup.cfg", "tool:pytest"))


def factories(root: str = ".") -> tuple[str, ...]:
    """``aliascheck_factories`` lines (``module:function``) from ``[tool.aliascheck]`` in pyproject.toml,
    else from an ini file's ``[aliascheck]`` (or pytest's) section, in the directory *root*."""
    import configparser

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - pytest depends on tomli for Python < 3.11
        import tomli as tomllib

    pyproject = os.path.join(root, "pyproject.toml")
    if os.path.isfile(pyproject):
        try:
            with open(pyproject, "rb") as f:
                table = tomllib.load(f).get("tool", {}).get("aliascheck", {})
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"{pyproject}: {exc}") from None
        value = table.get("aliascheck_factories", table.get("factories"))
        if value is not None:
            return _lines(value, "[tool.aliascheck] aliascheck_factories")
    for name, section in INI_FILES:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path)
        except configparser.Error as exc:
            raise UsageError(f"{path}: {exc}") from None
        if parser.has_option(section, "aliascheck_factories"):
            return _lines(parser.get(section, "aliascheck_factories"), f"{name} [{section}] aliascheck_factories")
    return ()


def _lines(value: Any, where: str) -> tuple[str, ...]:
    items = value.split() if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) and ":" in i for i in items):
        raise UsageError(f"{where}: expected module:function lines, not {value!r}")
    return tuple(items)
