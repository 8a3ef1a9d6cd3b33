"""The package's shape: imports point down the layers, without cycles; nothing in the runtime imports the
evaluation toolkit; backends are used through their packages; the Dagster layer holds no SQL; no class
grows past what one reader can hold."""

import ast
from pathlib import Path

import sarag_assets

PACKAGE = Path(sarag_assets.__file__).resolve().parent

# The layers, lowest first (the top-level folder or module of sarag_assets): a module imports its own layer
# and the layers before it, never one after it; the layers of one tuple are siblings and import neither
# each other. Everything before the evaluation toolkit is the runtime; `definitions` and `cli` compose both.
LAYERS = [
    ("settings",),
    ("core",),
    ("backends",),
    ("query",),
    ("service", "defs"),
    ("orchestration",),
    ("evaluation",),
    ("definitions",),
    ("cli",),
]
TOOLKIT = "evaluation"
MAX_CLASS_LINES = 300


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


def _rank(layer: str) -> int:
    if not layer:  # the package itself, below everything
        return -1
    return next(i for i, tier in enumerate(LAYERS) if layer in tier)


def _arrows_up(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from a layer to a later one, or to a sibling layer."""
    return sorted(
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if _layer(module) != _layer(target) and _rank(_layer(module)) <= _rank(_layer(target))
    )


def test_every_module_is_in_a_layer():
    layers = {layer for tier in LAYERS for layer in tier}
    assert sorted({_layer(m) for m in _graph() if m != "sarag_assets"} - layers) == []


def test_no_import_runs_from_a_lower_layer_up():
    assert _arrows_up(_graph()) == []


def test_the_layer_check_finds_an_arrow_up_and_between_siblings():
    graph = {"p.core.a": {"p.settings"}, "p.settings": {"p.query.b"}, "p.defs.c": {"p.service.d", "p.core.a"}}
    assert _arrows_up(graph) == [("p.defs.c", "p.service.d"), ("p.settings", "p.query.b")]


def test_nothing_in_the_runtime_imports_the_evaluation_toolkit():
    runtime = {layer for tier in LAYERS[: _rank(TOOLKIT)] for layer in tier}
    graph = _graph()
    assert {"settings", "core", "backends", "query", "service", "defs"} <= {_layer(m) for m in graph}
    wrong = sorted((m, t) for m, ts in graph.items() if _layer(m) in runtime for t in ts if _layer(t) == TOOLKIT)
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


def test_the_dagster_layer_holds_no_sql():
    offenders = []
    files = sorted((PACKAGE / "defs").glob("*.py")) + sorted((PACKAGE / "orchestration").glob("*.py"))
    assert files
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("execute", "sql"):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


def _long_classes(path: Path, module: str) -> dict[str, int]:
    return {f"{module}.{node.name}": node.end_lineno - node.lineno + 1
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES}


def test_no_class_is_longer_than_one_reader_can_hold():
    long = {}
    for name, path in _modules().items():
        long.update(_long_classes(path, name))
    assert long == {}


def test_the_class_check_measures_a_class_from_its_first_line_to_its_last(tmp_path):
    source = tmp_path / "m.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_CLASS_LINES))
    source.write_text(f"class Short:\n    pass\n\n\nclass Long:\n{body}\n", encoding="utf-8")
    assert _long_classes(source, "m") == {"m.Long": MAX_CLASS_LINES + 1}
