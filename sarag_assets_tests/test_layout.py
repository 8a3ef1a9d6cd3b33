"""The package's shape: imports point one way, without cycles; backends are used through their packages;
the Dagster layer holds no SQL; no module grows past what one reader can hold."""

import ast
from collections import defaultdict
from pathlib import Path

import sarag_assets

PACKAGE = Path(sarag_assets.__file__).resolve().parent
MAX_LINES = 800
MAX_EMBEDDED_LINES = 600  # the embedded backend's focused modules
# Data-shaped catalogs of the benchmark generator: products, issues and phrasings, not logic.
CATALOGS = {"evaluation/synthetic/catalog_software.py", "evaluation/synthetic/catalog_telecom.py",
            "evaluation/synthetic/catalog_orders.py", "evaluation/synthetic/catalog_accounts.py"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Every sarag_assets module this one imports, at any depth (lazy imports included), resolved to the
    most specific module: `from a.b import c` is a.b.c when c is a module, else a.b."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in modules and t != name)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, name, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_graph_is_read():
    graph = _graph()
    assert len(graph) > 60
    assert "sarag_assets.core.warehouse" in graph["sarag_assets.defs.ingest"]
    assert "sarag_assets.backends.embedded" in graph["sarag_assets.backends.registry"]


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_core_and_backends_import_nothing_above_them():
    upper = {"defs", "orchestration", "query", "evaluation", "definitions", "cli"}
    wrong = sorted(
        (module, target)
        for module, targets in _graph().items()
        if _layer(module) in ("core", "backends")
        for target in targets
        if _layer(target) in upper
    )
    assert wrong == []


def test_core_does_not_know_the_backends():
    wrong = sorted((m, t) for m, ts in _graph().items() if _layer(m) == "core" for t in ts if _layer(t) == "backends")
    assert wrong == []


def test_backend_internals_stay_inside_their_backend():
    backends = ("sarag_assets.backends.embedded", "sarag_assets.backends.llm")
    wrong = []
    checked = 0
    for module, targets in _graph().items():
        for backend in backends:
            if module == backend or module.startswith(backend + "."):
                continue
            for target in targets:
                checked += 1
                if target.startswith(backend + "."):
                    wrong.append((module, target))
    assert checked > 100
    assert wrong == []


def test_defs_hold_definitions_and_never_import_the_orchestration():
    graph = _graph()
    wrong = sorted((m, t) for m, ts in graph.items() if _layer(m) == "defs" for t in ts if _layer(t) == "orchestration")
    assert any(_layer(m) == "orchestration" and _layer(t) == "defs" for m, ts in graph.items() for t in ts)
    assert wrong == []


def test_the_dagster_layer_holds_no_sql():
    offenders = []
    files = sorted((PACKAGE / "defs").glob("*.py")) + sorted((PACKAGE / "orchestration").glob("*.py"))
    assert files
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("execute", "sql"):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


def test_no_module_is_too_long():
    too_long = defaultdict(int)
    files = sorted(PACKAGE.rglob("*.py"))
    assert files
    for path in files:
        relative = path.relative_to(PACKAGE).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        limit = MAX_EMBEDDED_LINES if relative.startswith("backends/embedded/") else MAX_LINES
        if lines > limit and relative not in CATALOGS:
            too_long[relative] = lines
    assert dict(too_long) == {}
