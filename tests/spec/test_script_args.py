"""A script's argparse declarations read with ast, the script never run."""

from __future__ import annotations

import ast
import textwrap

import pytest

from smtrain.spec.script_args import MISSING, script_args

SCRIPT = textwrap.dedent("""\
    import argparse, os
    parser = argparse.ArgumentParser(description="x")
    group = parser.add_argument_group("training")
    group.add_argument("--epochs", "-e", type=int, default=5)
    parser.add_argument("--learning-rate", dest="lr", type=float, default=1e-3)
    parser.add_argument("--data", default=os.environ.get("SM_CHANNEL_TRAIN"))
    parser.add_argument("--amp", action=argparse.BooleanOptionalAction)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("files", nargs="*")
    args, rest = parser.parse_known_args()
    other = parser.parse_args(["--epochs", "1"])  # a literal list: not the command line
    """)


def test_options_with_names_types_and_literal_defaults() -> None:
    args = script_args(ast.parse(SCRIPT))
    by_dest = {o.dest: o for o in args.options}
    assert list(by_dest) == ["epochs", "lr", "data", "amp", "seed", "files"]
    epochs = by_dest["epochs"]
    assert (epochs.flags, epochs.name, epochs.type, epochs.default, epochs.line) == (("--epochs", "-e"), "epochs",
                                                                                     "int", 5, 4)
    assert by_dest["lr"].name == "learning-rate" and by_dest["lr"].default == 0.001
    assert by_dest["data"].default is MISSING and by_dest["data"].has_default  # computed when the script runs
    assert not by_dest["amp"].takes_value and by_dest["seed"].required
    assert by_dest["files"].positional and not by_dest["files"].required  # nargs="*"


def test_how_the_command_line_is_parsed() -> None:
    args = script_args(ast.parse(SCRIPT))
    assert not args.strict and args.parse_line == 10 and args.makes_parser and args.complete
    strict = script_args(ast.parse("import argparse\np = argparse.ArgumentParser()\ndef main(argv=None):\n"
                                   "    return p.parse_args(argv)\n"))
    assert strict.strict and strict.parse_line == 4  # argv from a caller: the command line, most likely


# As argparse matches `--name`: exactly, else the one long option it begins (two: "ambiguous option", an error).
@pytest.mark.parametrize(("given", "found"), [("epochs", "epochs"), ("e", "epochs"), ("learning", "lr"),
                                              ("learning-rate", "lr"), ("lr", None), ("s", "seed"), ("x", None)])
def test_which_option_a_hyperparameter_reaches(given: str, found: str | None) -> None:
    option = script_args(ast.parse(SCRIPT)).option_for(given)
    assert (option.dest if option else None) == found


def test_a_prefix_of_two_options_reaches_none() -> None:
    args = script_args(ast.parse(SCRIPT + 'parser.add_argument("--eval-every", type=int, default=1)\n'))
    assert args.option_for("e") is None and args.option_for("ep").dest == "epochs"


def test_without_abbreviations_only_exact_names() -> None:
    args = script_args(ast.parse(SCRIPT.replace('ArgumentParser(description="x")',
                                                "ArgumentParser(allow_abbrev=False)")))
    assert args.option_for("learning") is None and args.option_for("learning-rate") is not None


def test_unreadable_declarations_make_it_incomplete() -> None:
    args = script_args(ast.parse("import argparse\np = argparse.ArgumentParser()\nfor n in NAMES:\n"
                                 "    p.add_argument(n)\np.add_argument('--x', **opts)\np.parse_args()\n"))
    assert not args.complete and args.undeclared_lines == (4, 5) and args.options == ()
