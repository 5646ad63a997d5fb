"""What a Python script's argparse parsers declare, read with ast alone: the script is never imported or run.

SageMaker starts a script as `python train.py --name value ...`, one pair per hyperparameter (the TensorFlow
contract adds `--model_dir`). Whether that command line works depends on what the parser declares and on how the script
parses: `parse_args()` refuses an argument it does not know, `parse_known_args()` leaves it aside. The
preflight scan checks the spec's hyperparameters against this; `smtrain init` writes the declared defaults
into a starting spec.

Every `<something>.add_argument(...)` call of the file counts as a declaration: argparse's name is unusual
enough that nothing else in a training script uses it, and argument groups, parent parsers and helper
functions that receive the parser are then all covered without following values.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from smtrain.spec.python_file import walk

# Actions that take no value on the command line: `--flag value` fails (or silently ignores the value).
NO_VALUE_ACTIONS = frozenset({"store_true", "store_false", "store_const", "append_const", "count", "help",
                              "version", "BooleanOptionalAction"})
_STRICT_PARSES = frozenset({"parse_args", "parse_intermixed_args"})
_LENIENT_PARSES = frozenset({"parse_known_args", "parse_known_intermixed_args"})
_OPTIONAL_NARGS = ("?", "*", "...")  # a positional that may be absent ("..." is argparse.REMAINDER)


class _Missing:
    """No literal default: none given, or one computed at run time (`os.environ[...]`)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Option:
    """One add_argument call."""

    flags: tuple[str, ...]  # option strings as written ("--batch-size", "-b"); () for a positional
    dest: str
    line: int
    action: str | None = None  # "store_true", "BooleanOptionalAction", ...; None is argparse's store
    type: str | None = None  # the type as written: "int", "float", "str2bool"; None when not given
    default: Any = MISSING  # the default when it is a literal
    has_default: bool = False  # default= given at all, literal or not
    required: bool = False  # argparse refuses the command line without it
    nargs: str | int | None = None

    @property
    def positional(self) -> bool:
        return not self.flags

    @property
    def long_flags(self) -> tuple[str, ...]:
        return tuple(f for f in self.flags if f.startswith("--"))

    @property
    def name(self) -> str | None:
        """The hyperparameter name that reaches this option (`--name value`): its first long flag."""
        return self.long_flags[0][2:] if self.long_flags else None

    @property
    def takes_value(self) -> bool:
        return self.action not in NO_VALUE_ACTIONS and self.nargs != 0


@dataclass(frozen=True)
class ParseCall:
    line: int
    strict: bool  # parse_args(): an unknown argument ends the script


@dataclass(frozen=True)
class ScriptArgs:
    """The argparse declarations and parse calls of one file (or several, merged)."""

    options: tuple[Option, ...] = ()
    parses: tuple[ParseCall, ...] = ()  # calls that read the command line (not `parse_args([...])`)
    makes_parser: bool = False  # an ArgumentParser(...) is built here
    allow_abbrev: bool = True  # argparse takes `--epoch` for `--epochs` unless a parser says otherwise
    complete: bool = True  # every add_argument's option strings were literals
    undeclared_lines: tuple[int, ...] = field(default=(), compare=False)  # add_argument calls not read
    inherits: bool = False  # a parser takes parents=[...] or is handed to other code: options may come from elsewhere

    @property
    def strict(self) -> bool:
        return any(p.strict for p in self.parses)

    @property
    def parse_line(self) -> int | None:
        """Where the command line is parsed: the first strict call, else the first call."""
        strict = [p.line for p in self.parses if p.strict]
        lines = strict or [p.line for p in self.parses]
        return min(lines) if lines else None

    def option_for(self, name: str) -> Option | None:
        """The option `--name value` reaches, as argparse matches it (exactly, else a unique prefix)."""
        flag = f"--{name}"
        for option in self.options:
            if flag in option.flags:
                return option
        if not self.allow_abbrev:
            return None
        matches = [o for o in self.options for f in o.long_flags if f.startswith(flag)]
        return matches[0] if len({id(o) for o in matches}) == 1 else None

    def merged(self, other: ScriptArgs) -> ScriptArgs:
        return ScriptArgs(self.options + other.options, self.parses + other.parses,
                          self.makes_parser or other.makes_parser, self.allow_abbrev and other.allow_abbrev,
                          self.complete and other.complete, self.undeclared_lines + other.undeclared_lines,
                          self.inherits or other.inherits)


def _literal(node: ast.AST | None) -> Any:
    if node is None:
        return MISSING
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return MISSING


def _text(node: ast.AST | None) -> str | None:
    """A name as written: `int`, `argparse.BooleanOptionalAction` -> BooleanOptionalAction, 'store_true'."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _method(node: ast.Call) -> str | None:
    return node.func.attr if isinstance(node.func, ast.Attribute) else None


def _option(call: ast.Call) -> Option | None:
    flags = []
    for arg in call.args:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return None  # `add_argument(*names)`: not readable without running the script
        flags.append(arg.value)
    if not flags:
        return None
    keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
    if any(k.arg is None for k in call.keywords):  # add_argument("--x", **settings)
        return None
    positional = not flags[0].startswith("-")
    nargs = _literal(keywords.get("nargs"))
    nargs = None if nargs is MISSING else nargs
    dest = _literal(keywords.get("dest"))
    if not isinstance(dest, str):
        long_flags = [f for f in flags if f.startswith("--")]
        dest = flags[0] if positional else (long_flags or flags)[0].lstrip("-").replace("-", "_")
    required = _literal(keywords.get("required"))
    if positional:
        required = nargs not in _OPTIONAL_NARGS
    default_node = keywords.get("default")
    return Option(flags=() if positional else tuple(flags), dest=dest, line=call.lineno,
                  action=_text(keywords.get("action")), type=_text(keywords.get("type")),
                  default=_literal(default_node), has_default=default_node is not None,
                  required=required is True, nargs=nargs)


def _reads_command_line(call: ast.Call) -> bool:
    """parse_args() reads sys.argv; parse_args(["--x", "1"]) (a literal list) does not."""
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "args"), None)
    if given is None or (isinstance(given, ast.Constant) and given.value is None):
        return True
    return not isinstance(given, (ast.List, ast.Tuple, ast.Constant))


def _is_parser_class(func: ast.expr) -> bool:
    return _text(func) == "ArgumentParser"


def script_args(tree: ast.AST) -> ScriptArgs:
    """The declarations and parse calls of a parsed file."""
    options: list[Option] = []
    parses: list[ParseCall] = []
    unread: list[int] = []
    makes_parser, allow_abbrev, inherits = False, True, False
    for node in walk(tree):
        if not isinstance(node, ast.Call):
            continue
        method = _method(node)
        if method == "add_argument":
            option = _option(node)
            if option is None:
                unread.append(node.lineno)
            else:
                options.append(option)
        elif method in _STRICT_PARSES or method in _LENIENT_PARSES:
            if _reads_command_line(node):
                parses.append(ParseCall(node.lineno, method in _STRICT_PARSES))
        elif _is_parser_class(node.func):
            makes_parser = True
            for keyword in node.keywords:
                if keyword.arg == "allow_abbrev" and _literal(keyword.value) is False:
                    allow_abbrev = False
                inherits = inherits or keyword.arg == "parents"
    options.sort(key=lambda o: o.line)
    parses.sort(key=lambda p: p.line)
    return ScriptArgs(tuple(options), tuple(parses), makes_parser, allow_abbrev, not unread, tuple(sorted(unread)),
                      inherits or _parser_handed_on(tree))


def _parser_handed_on(tree: ast.AST) -> bool:
    """Whether a parser is passed to other code (`add_common_args(parser)`), which may declare options
    this file does not show."""
    parsers = {target.id for node in walk(tree) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
               and _is_parser_class(node.value.func) for target in node.targets if isinstance(target, ast.Name)}
    for node in walk(tree):
        if isinstance(node, ast.Call) and parsers:
            given = [*node.args, *(k.value for k in node.keywords)]
            if any(isinstance(arg, ast.Name) and arg.id in parsers for arg in given):
                return True
    return False
