"""Which of a bundle's own modules a script imports, at any depth: whether it reaches a given package.

Read from the bundle's bytes with ast (nothing runs): `import a.b`, `from a import b` and relative imports
(`from . import x`, `from .pkg import y`), each found as the bundle's `a/b.py` or `a/b/__init__.py` beside the
code directory's root or the importing file's own directory (both are on sys.path for a script).
"""

from __future__ import annotations

import ast
import io
import os
import tarfile


def _python_files(bundle: bytes, leave_out: str) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as archive:
        for member in archive.getmembers():
            name = member.name.removeprefix("./")
            if not member.isfile() or not name.endswith(".py") or name.startswith(leave_out + "/"):
                continue
            content = archive.extractfile(member)
            if content is not None:
                files[name] = content.read()
    return files


def _imported(path: str, source: bytes) -> set[str]:
    """The modules a file imports, as dotted names from the root (every prefix: `a.b` gives a and a.b)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
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


def reaches(bundle: bytes, script: str, package: str) -> bool:
    """Whether `script` (a path in the bundle), or a module of the bundle it imports at any depth, imports
    `package` (whose own files in the bundle are not followed)."""
    files = _python_files(bundle, package)
    roots = {"", os.path.dirname(script)}
    todo, seen = [script], set()
    while todo:
        path = todo.pop()
        if path in seen or path not in files:
            continue
        seen.add(path)
        modules = _imported(path, files[path])
        if package in modules:
            return True
        for module in modules:
            base = module.replace(".", "/")
            todo.extend(os.path.normpath(os.path.join(root, f"{base}{end}"))
                        for root in roots for end in (".py", "/__init__.py"))
    return False
