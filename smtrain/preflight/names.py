"""Who is who in a parsed script: the dotted name each expression stands for, through its imports.

`import tensorflow.compat.v1 as tf` makes `tf.Session` mean tensorflow.compat.v1.Session; `from
tensorflow import keras` makes `keras.utils.multi_gpu_model` mean tensorflow.keras.utils.multi_gpu_model.
Names are then put in one spelling (tensorflow.keras, tf_keras and keras are all `keras`) so that a rule
names a thing once. Nothing is imported: the script's own names are read as it writes them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from smtrain.spec.python_file import walk
from smtrain.spec.script_reads import parents_of

# Names a snippet uses without importing them, as everyone writes them.
_CONVENTIONS = {"tf": "tensorflow", "np": "numpy", "pd": "pandas", "hvd": "horovod.tensorflow"}

# One spelling per thing: the longest prefix first.
_SPELLINGS = (("tensorflow.python.keras", "keras"), ("tensorflow.keras", "keras"), ("tf_keras", "keras"),
              ("keras.src", "keras"), ("tensorflow.compat.v2", "tensorflow"))


def canonical(name: str) -> str:
    for prefix, spelling in _SPELLINGS:
        if name == prefix or name.startswith(prefix + "."):
            return spelling + name[len(prefix):]
    return name


class Names:
    """The imports of one file, and the dotted name an expression stands for."""

    def __init__(self, tree: ast.AST) -> None:
        self.aliases: dict[str, str] = {}
        self.imported: set[str] = set()  # full module names imported anywhere in the file
        for node in walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.imported.add(alias.name)
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        self.aliases[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                self.imported.add(node.module)
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def raw(self, node: ast.AST) -> str | None:
        """`tf.distribute.MirroredStrategy` -> tensorflow.distribute.MirroredStrategy; None for a call's result."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, _CONVENTIONS.get(node.id, node.id))
        if isinstance(node, ast.Attribute):
            base = self.raw(node.value)
            return f"{base}.{node.attr}" if base is not None else None
        return None

    def qualified(self, node: ast.AST) -> str | None:
        name = self.raw(node)
        return canonical(name) if name is not None else None

    def uses(self, *roots: str) -> bool:
        """Whether the file imports any of these packages (or a module of theirs)."""
        return any(m == r or m.startswith(r + ".") for m in self.imported for r in roots)


def references(tree: ast.AST, names: Names) -> Iterator[tuple[str, int]]:
    """Every dotted name the file mentions, in one spelling, with its line: imports, names, attributes."""
    for node in walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield canonical(alias.name), node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield canonical(node.module), node.lineno
            for alias in node.names:
                yield canonical(f"{node.module}.{alias.name}"), node.lineno
        elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            name = names.qualified(node)
            if name is not None:
                yield name, node.lineno


def leaf(node: ast.AST) -> str:
    """The last name of an expression as written: `self.model` -> model, `build()` -> build."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return leaf(node.func)
    if isinstance(node, ast.Subscript):
        return leaf(node.value)
    return ""


def parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """node -> the node that holds it."""
    return parents_of(tree)
