"""A bundled script read as `smtrain check` needs it (ast only; nothing runs): whether it reaches a package
through its imports, and whether it names a method (model.fit), in itself or the bundle's modules it imports.

Imports are followed at any depth: `import a.b`, `from a import b` and relative ones (`from . import x`,
`from .pkg import y`), each found as the bundle's `a/b.py` or `a/b/__init__.py` beside the code directory's
root or the importing file's own directory (both are on sys.path for a script).
"""

from __future__ import annotations

import ast
import io
import os
import tarfile


def _python_files(bundle: bytes) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as archive:
        for member in archive.getmembers():
            name = member.name.removeprefix("./")
            content = archive.extractfile(member) if member.isfile() and name.endswith(".py") else None
            if content is not None:
                files[name] = content.read()
    return files


def _imported(path: str, tree: ast.AST) -> set[str]:
    """The modules a file imports, as dotted names from the root (every prefix: `a.b` gives a and a.b)."""
    package = os.path.dirname(path).replace("/", ".")
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative to the importing file's package
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            if base:
                names.add(base)
            names.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names)
    return {".".join(name.split(".")[:i]) for name in names for i in range(1, name.count(".") + 2)}


class ScriptReading:
    """`script` (its path in the bundle) and the bundle's own modules it imports, at any depth."""

    def __init__(self, bundle: bytes, script: str) -> None:
        files = _python_files(bundle)
        roots = {"", os.path.dirname(script)}
        self.modules: set[str] = set()  # what they import
        self.trees: list[ast.AST] = []
        todo, seen = [script], set()
        while todo:
            path = todo.pop()
            if path in seen or path not in files or path.startswith("smtrain_tf/"):  # smtrain's own: not the user's
                continue
            seen.add(path)
            try:
                tree = ast.parse(files[path])
            except (SyntaxError, ValueError):
                continue
            self.trees.append(tree)
            imported = _imported(path, tree)
            self.modules |= imported
            for module in imported:
                base = module.replace(".", "/")
                todo.extend(os.path.normpath(os.path.join(root, f"{base}{end}"))
                            for root in roots for end in (".py", "/__init__.py"))

    def reaches(self, package: str) -> bool:
        """Whether the script or a module of the bundle it imports imports `package`."""
        return package in self.modules

    def names(self, *attributes: str) -> bool:
        """Whether any of them names one of `attributes` on something (`model.fit(...)`, `train = model.fit`), or as
        a string (`getattr(model, "fit")`): a guess that errs towards yes."""
        wanted = set(attributes)
        return any((isinstance(node, ast.Attribute) and node.attr in wanted) or
                   (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in wanted)
                   for tree in self.trees for node in ast.walk(tree))
