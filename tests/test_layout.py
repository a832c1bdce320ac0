"""How the package is laid out (DESIGN.md): one job per module, data flowing forward only.

Read from the source with :mod:`ast` (no import of the package), except where a class's
ancestry must be known (exceptions) or the contract is checked by import-linter itself.

* the import graph, top-level and lazy imports alike, has no cycle once the documented
  facades are set aside, and each facade is one lazy import inside its one method;
* nothing that can see an Explanation (the layers above ``explanation/``) touches private
  state (``x._name``) but its own;
* no module over 900 lines, and each of ``explanation/`` under 500;
* ``rudi_explain.__all__`` is one literal list;
* every error the package defines is a :class:`rudi_explain.RudiExplainError`;
* ``lint-imports`` keeps the layers contract of ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rudi_explain"
NAME = "rudi_explain"

#: The documented facades: the only imports of a module above the importer (DESIGN.md), each
#: one lazy import inside one method: (class, method) -> the package it may import from.
FACADES: dict[tuple[str, str], str] = {
    ("Statistic", "to_sql"): "rudi_explain.sql",
    ("RuleSet", "to_sql"): "rudi_explain.sql",
    ("Explanation", "user"): "rudi_explain.audit",
    ("Explanation", "with_threshold"): "rudi_explain.audit",
    ("Explanation", "agreement"): "rudi_explain.audit",
    ("Explanation", "widget"): "rudi_explain.views",
    ("Explanation", "to_html"): "rudi_explain.views",
    ("Explanation", "_ipython_display_"): "rudi_explain.views",
}

#: Private attributes of objects that are not ours, read or set on purpose: (file, attribute) -> why.
PRIVATE_ALLOWED: dict[tuple[str, str], str] = {
    ("rudi_explain/views/kernel_messages.py", "_reply_subshell_for"):
        "ipykernel's Comm looks this hook up with getattr; setting it on the instance is how a reply "
        "is routed to a subshell (there is no public way)",
    ("rudi_explain/views/kernel_messages.py", "_supports_kernel_subshells"):
        "ipykernel's Kernel says so only in this attribute: whether the kernel has subshells",
}

#: Errors defined in the package that are deliberately not RudiExplainError: class name -> why.
ERRORS_ALLOWED: dict[str, str] = {
    "WaitInterrupted": "a KeyboardInterrupt (Ctrl-C during wait()), so that no `except Exception` "
                       "or `except RudiExplainError` swallows it",
}

MAX_LINES = 900
MAX_LINES_EXPLANATION = 500  # each file of rudi_explain/explanation/ stays under this


# --------------------------------------------------------------------------- the import graph
def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    #: ``Class.method`` (or ``function``, ``Class.method.<locals>.f``) around the import; None at module level.
    scope: str | None

    @property
    def lazy(self) -> bool:
        return self.scope is not None

    def __str__(self) -> str:
        where = f"in {self.scope}" if self.lazy else "top level"
        return f"{self.importer} -> {self.imported} (line {self.line}, {where})"


def _resolve(name: str) -> str | None:
    """The package's module that an imported dotted name lands in (its longest module prefix)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> set[str]:
    if isinstance(node, ast.Import):
        names = {alias.name for alias in node.names}
        return {t for t in map(_resolve, (n for n in names if n.split(".")[0] == NAME)) if t}
    base = node.module or ""
    if node.level:  # relative: from the importer's package, one level up per extra dot
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    if base.split(".")[0] != NAME:
        return set()
    out = set()
    for alias in node.names:
        # ``from pkg import module`` imports that module; ``from pkg import name`` imports pkg.
        target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else _resolve(base)
        if target:
            out.add(target)
    return out


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module, self.is_package = module, is_package
        self.scope: list[str] = []
        self.functions = 0
        self.found: list[Import] = []

    def _scoped(self, node: ast.AST, name: str, function: bool) -> None:
        self.scope.append(name if not (function and self.functions) else f"<locals>.{name}")
        self.functions += function
        self.generic_visit(node)
        self.functions -= function
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, node.name, False)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node, node.name, True)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _add(self, node: ast.Import | ast.ImportFrom) -> None:
        scope = ".".join(self.scope) if self.functions else None
        for target in sorted(_targets(node, self.module, self.is_package)):
            if target != self.module:
                self.found.append(Import(self.module, target, node.lineno, scope))

    visit_Import = _add
    visit_ImportFrom = _add


def _imports() -> list[Import]:
    """Every import of one of the package's modules by another, wherever it stands in the file
    (module level, ``if TYPE_CHECKING:``, inside a function)."""
    out = []
    for module, path in MODULES.items():
        visitor = _Imports(module, path.name == "__init__.py")
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        out.extend(visitor.found)
    return out


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _facade(imp: Import) -> tuple[str, str] | None:
    """The facade this import is, if it is one: a lazy import right inside the listed method."""
    if imp.scope is None or imp.scope.count(".") != 1:
        return None
    cls, method = imp.scope.split(".")
    target = FACADES.get((cls, method))
    return (cls, method) if target is not None and _within(imp.imported, target) else None


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph, as [a, b, ..., a]; None if it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_is_read():
    """The walk sees what it must: top-level, lazy and package-relative imports."""
    imports = _imports()
    pairs = {(i.importer, i.imported) for i in imports}
    assert ("rudi_explain.statistics.statistic", "rudi_explain.statistics.describe") in pairs
    assert any(i.lazy and _facade(i) == ("Statistic", "to_sql") for i in imports)
    assert len(MODULES) > 40


def test_no_import_cycle_outside_the_facades():
    imports = _imports()
    edges: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], Import] = {}
    for imp in imports:
        if _facade(imp) is None:
            edges.setdefault(imp.importer, set()).add(imp.imported)
            lines.setdefault((imp.importer, imp.imported), imp)
    cycle = _find_cycle(edges)
    if cycle is not None:
        steps = "\n  ".join(str(lines[a, b]) for a, b in zip(cycle, cycle[1:]))
        pytest.fail(f"import cycle {' -> '.join(cycle)}:\n  {steps}")


def test_each_facade_is_one_lazy_import_in_its_method():
    per_method: dict[tuple[str, str, str], list[Import]] = {}
    for imp in _imports():
        key = _facade(imp)
        if key is not None:
            per_method.setdefault((imp.importer, *key), []).append(imp)
    more = {key: [str(i) for i in found] for key, found in per_method.items()
            if len({i.line for i in found}) > 1}
    assert not more, f"a facade is one lazy import, these have more: {more}"


def test_the_contract_ignores_exactly_facades():
    """Each ``ignore_imports`` line of the layers contract names an import that is only ever a
    facade: import-linter ignores the pair wherever it stands, this checks where."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    ignored = [line for c in contracts if c["type"] == "layers" for line in c.get("ignore_imports", [])]
    assert ignored, "the layers contract lists its facades in ignore_imports"
    imports = _imports()
    wrong = []
    for line in ignored:
        importer, _, imported = (part.strip() for part in line.partition("->"))
        assert "*" not in line, f"{line!r}: name the modules, no wildcards"
        found = [i for i in imports if i.importer == importer and _within(i.imported, imported)]
        if not found:
            wrong.append(f"{line!r}: no such import")
        wrong += [f"{line!r}: {i} is not a facade" for i in found if _facade(i) is None]
    assert not wrong, "\n".join(wrong)


# --------------------------------------------------------------------------- private state
def _above_explanation() -> list[str]:
    """The modules that can see an Explanation: those in the layers above ``explanation``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = next(c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    above = [name for layer in layers[:layers.index(f"{NAME}.explanation")] for name in layer.split("|")]
    modules = [m for m in MODULES if any(_within(m, layer.strip()) for layer in above)]
    return sorted(modules + [NAME])  # the package's __init__ too


def _own_private(tree: ast.Module) -> set[str]:
    """Private names this module's own classes define (``self._x = ...``, a class attribute,
    ``__slots__``, a method): its own state, which it may touch on any instance."""
    own = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in cls.body:
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self":
                own.add(node.attr)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node in cls.body:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                own.update(t.id for t in targets if isinstance(t, ast.Name))
                value = node.value
                if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets) and value is not None:
                    own.update(e.value for e in ast.walk(value)
                               if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return {name for name in own if name.startswith("_")}


def _private_touches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    modules = set()  # names bound to modules: np._x is numpy's, not an object's state
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            modules.update(a.asname or a.name for a in node.names
                           if f"{base}.{a.name}" in MODULES or a.name[:1].islower() and base.split(".")[0] != NAME
                           and _is_module(f"{base}.{a.name}"))
    own = _own_private(tree)
    rel = path.relative_to(ROOT).as_posix()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):  # x._name
            owner, attr = node.value, node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            owner, attr = node.args[0], node.args[1].value  # getattr(x, "_name")
        else:
            continue
        if not attr.startswith("_") or (attr.startswith("__") and attr.endswith("__")):
            continue
        if isinstance(owner, ast.Name) and owner.id in ({"self", "cls"} | modules):
            continue
        if attr in own or (rel, attr) in PRIVATE_ALLOWED:
            continue
        out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return out


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def test_nothing_outside_explanation_touches_its_private_state():
    """``exp._fires``, ``L._pipeline_text``: the result (and the objects it hands out) are read
    through their public attributes only, outside ``rudi_explain/explanation/``."""
    touches = [t for m in _above_explanation() for t in _private_touches(MODULES[m])]
    assert not touches, "private state read or set from outside:\n  " + "\n  ".join(touches)


# --------------------------------------------------------------------------- sizes, __all__, errors
def test_modules_stay_small():
    long = {}
    for module, path in MODULES.items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        limit = MAX_LINES_EXPLANATION - 1 if _within(module, f"{NAME}.explanation") else MAX_LINES
        if n > limit:
            long[path.relative_to(ROOT).as_posix()] = n
    assert not long, f"files over {MAX_LINES} lines (explanation/: {MAX_LINES_EXPLANATION - 1}): {long}"


def test_all_is_one_literal_list():
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    touches = [node for node in ast.walk(tree)
               if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               and any(isinstance(t, ast.Name) and t.id == "__all__"
                       for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute)
             and isinstance(node.value, ast.Name) and node.value.id == "__all__"]
    assert len(touches) == 1 and not calls, "__all__ is assigned once and never extended"
    (node,) = touches
    assert isinstance(node, ast.Assign) and node in tree.body and isinstance(node.value, ast.List)
    names = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    assert len(names) == len(node.value.elts), "__all__ holds string literals only"
    assert len(set(names)) == len(names), "no name twice in __all__"
    import rudi_explain

    assert rudi_explain.__all__ == names
    missing = [n for n in names if not hasattr(rudi_explain, n)]
    assert not missing, f"__all__ names what the package does not have: {missing}"


def test_every_error_is_a_rudi_explain_error():
    from rudi_explain.exceptions import RudiExplainError

    bad = []
    for info in pkgutil.walk_packages([str(PACKAGE)], f"{NAME}."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__ and issubclass(obj, BaseException) \
                    and not issubclass(obj, RudiExplainError) and name not in ERRORS_ALLOWED:
                bad.append(f"{info.name}.{name}")
    assert not bad, f"errors that are not RudiExplainError: {bad}"


# --------------------------------------------------------------------------- import-linter
def test_lint_imports_keeps_the_contract():
    exe = Path(sys.executable).with_name("lint-imports")
    command = [str(exe)] if exe.exists() else [shutil.which("lint-imports") or "lint-imports"]
    done = subprocess.run([*command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
