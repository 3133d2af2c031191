"""The shape of the apps, kept: no app module over 400 lines, no import circle between the
product's modules, and no view module used as a library (a view module is one a URL conf routes
to; only URL confs import it)."""

from __future__ import annotations

from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
APPS = ("accounts", "booking", "catalog", "dashboard")
PRODUCT = ("strongroom", *APPS)
LIMIT = 400


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PRODUCT, cache_dir=None)


def long_modules(root: Path, packages: tuple[str, ...]) -> dict[str, int]:
    return {
        str(path.relative_to(root)): n
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > LIMIT
    }


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def views_used_as_libraries(edges: dict[str, set[str]]) -> list[str]:
    """Imports of a view module (one a URL conf imports) by anything but a URL conf."""
    confs = {m for m in edges if m.rsplit(".", 1)[-1] in ("urls", "staff_urls")}
    views = {
        v
        for conf in confs
        for v in edges[conf]
        if v not in confs and v.split(".")[0] == conf.split(".")[0] and _routes_to(v)
    }
    return sorted(
        f"{m} imports {v}"
        for m, targets in edges.items()
        if m not in confs
        for v in targets & views
    )


def _routes_to(module: str) -> bool:
    """Whether a module holds views (a URL conf may also import helpers, like a redirect's)."""
    path = ROOT / (module.replace(".", "/") + ".py")
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return "HttpResponse" in text and "def " in text and "request: HttpRequest" in text


def test_no_app_module_is_over_400_lines() -> None:
    assert long_modules(ROOT, PRODUCT) == {}


def test_no_import_circle_between_the_products_modules() -> None:
    assert circles(_edges(_graph())) == []


def test_no_view_module_is_imported_as_a_library() -> None:
    assert views_used_as_libraries(_edges(_graph())) == []


def test_each_check_notices_what_it_is_for(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "big.py").write_text("x = 1\n" * (LIMIT + 1))
    assert long_modules(tmp_path, ("app",)) == {"app/big.py": LIMIT + 1}
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    edges = _edges(_graph())
    edges["booking.web.move"] = edges["booking.web.move"] | {"booking.web.mine"}
    assert views_used_as_libraries(edges) == ["booking.web.move imports booking.web.mine"]
