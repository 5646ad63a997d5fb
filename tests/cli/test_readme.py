"""README.md, entrypoints/README.md and the docs site's pages are tested documents: every command line they
show parses.

Each `smtrain ...` line in a shell code block is read the way a person reads the tour: `[...]` is an
optional part (taken as present), `a|b` lists alternatives (each is checked), `...` and `# comments`
end the line. The words must then be a command smtrain has, with options that command accepts.
"""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import click
import pytest

from smtrain.cli.commands import main
from tests.support import ROOT
from tests.support.docs import PAGES, section

DOCS = PAGES
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def shell_lines(path: Path) -> list[str]:
    lines = []
    for lang, body in _FENCE.findall(path.read_text(encoding="utf-8")):
        if lang in ("sh", "bash", "shell", "console", ""):
            lines += shell_lines_of(body)
    return lines


def shell_lines_of(body: str) -> list[str]:
    """The smtrain command lines of one block."""
    lines = []
    for line in body.splitlines():
        # `a && b` and `a; b` are two commands (a comment's own `;` stays in the comment)
        code, _, comment = line.strip().removeprefix("$ ").partition(" #")
        parts = re.split(r"\s*(?:&&|;)\s*", code)
        for part in parts:
            words = part.split()
            if words and Path(words[0]).name == "smtrain":
                lines.append(part + (f" #{comment}" if comment and part == parts[-1] else ""))
    return lines


def variants(line: str) -> list[list[str]]:
    """The command lines a tour line stands for: alternatives expanded, brackets opened."""
    line = line.split(" #")[0].split("...")[0].split(">")[0]
    line = line.replace("[", " ").replace("]", " ")
    words = shlex.split(line)[1:]
    choices = [w.split("|") if "|" in w and not w.startswith("-") else [w] for w in words]
    return [list(combo) for combo in itertools.product(*choices)]


def check(words: list[str]) -> None:
    """Walk click's tree as it would, checking every option against the command it is given to."""
    command: click.Command = main
    ctx = click.Context(main, info_name="smtrain")
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            name = word.split("=")[0]
            params = {opt: p for p in command.params for opt in (*p.opts, *p.secondary_opts)}
            assert name in params, f"{' '.join(words)}: {ctx.command_path} has no option {name}"
            param = params[name]
            takes_value = isinstance(param, click.Option) and not param.is_flag and not param.count
            i += 2 if takes_value and "=" not in word else 1
            continue
        if isinstance(command, click.Group):
            sub = command.get_command(ctx, word)
            assert sub is not None, f"{' '.join(words)}: no command {word!r}"
            command, ctx = sub, click.Context(sub, info_name=word, parent=ctx)
        i += 1
    assert not isinstance(command, click.Group) or words == ["--help"] or not words, \
        f"{' '.join(words)}: names no command"


LINES = [(path.relative_to(ROOT).as_posix(), line) for path in DOCS for line in shell_lines(path)]


def test_the_readmes_show_commands() -> None:
    assert len(LINES) > 10


@pytest.mark.parametrize(("doc", "line"), LINES, ids=[f"{d}:{line[:60]}" for d, line in LINES])
def test_every_command_line_parses(doc: str, line: str) -> None:
    for words in variants(line):
        check(words)


def test_the_check_refuses_what_smtrain_refuses() -> None:
    for words in (["plan", "job.yaml", "--no-such-flag"], ["frobnicate"], ["instances", "--region-x", "a"]):
        with pytest.raises(AssertionError):
            check(words)


def test_help_lists_every_exit_code_of_the_readme() -> None:
    table = section("Exit codes")
    codes = re.findall(r"^\| (\d+) \|", table, re.M)
    assert "70" in codes
    help_text = " ".join((main.help or "").split())
    assert [c for c in codes if f" {c} " not in f" {help_text} "] == []


def test_the_entrypoint_readme_names_every_module_of_smtrain_tf() -> None:
    package = ROOT / "entrypoints" / "smtrain_tf"
    text = (ROOT / "entrypoints" / "README.md").read_text(encoding="utf-8")
    modules = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py")
                     if p.name != "__init__.py" and "__pycache__" not in p.parts)
    assert [m for m in modules if f"`{m}`" not in text and f"`{Path(m).name}`" not in text] == []


def documented_keys(label: str) -> set[str]:
    """The keys README's "JSON output" lists for `label` (nested ones, in parentheses, left out)."""
    text = section("JSON output")
    bullet = re.search(rf"^- \*\*{re.escape(label)}\*\*[^:]*:(.*?)(?=^- \*\*|\Z)", text, re.M | re.S)
    assert bullet, label
    text = re.sub(r"\([^()]*(?:\([^()]*\)[^()]*)*\)", "", bullet.group(1))  # drop parenthesised details
    text = re.split(r"\.\s", text)[0]  # the list of keys ends its first sentence; notes follow
    return set(re.findall(r"`(\w+)`", text))


def test_documented_job_keys_are_the_job_keys() -> None:
    from smtrain.jobs import JobInfo

    assert documented_keys("Job") == set(JobInfo(name="x", backend="local", status="Completed").to_dict())


def test_documented_tensorboard_keys_are_what_tensorboard_prints() -> None:
    from smtrain.jobs import EventFiles

    assert documented_keys("tensorboard") == set(EventFiles("j", "local", Path("/x"), 1).to_dict(None))


def test_documented_submit_keys_are_what_submit_prints() -> None:
    from smtrain.cli.render import local_submitted
    from smtrain.jobs import JobInfo

    class Request:  # what local_submitted reads of a Request
        source_uri = "/x/sourcedir.tar.gz"

        class bundle:  # noqa: N801
            sha256, size = "0" * 64, 1

        def git_summary(self) -> None:
            return None

    printed = local_submitted(Request(), JobInfo(name="j", backend="local", status="Completed"))
    assert documented_keys("submit") == set(printed)


@pytest.mark.slow  # renders through the SageMaker SDK
def test_documented_dry_run_keys_are_what_the_dry_run_prints(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "smtrain", "submit", str(ROOT / "configs" / "mwms.yaml"),
                          "--dry-run", "-o", "json"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert documented_keys("submit --dry-run") == set(json.loads(out.stdout))


# Shell blocks that tests run as they are written (the page, the block's first line): the rest of a page's
# commands are parsed above, and a block that would reach AWS says so.
RUN_BY_TESTS = {
    ("docs/getting-started.md", "python3 -m venv .venv && .venv/bin/pip install '.[local]'"):
        "tests/cli/test_first_hour_venv.py",
    ("docs/guides/moto.md", "export AWS_ENDPOINT_URL=http://127.0.0.1:5000"): "tests/sagemaker/test_moto_recipe.py",
}
NEEDS_AWS = "# needs AWS"
MOTO_HERE = "AWS_ENDPOINT_URL=http://127.0.0.1"  # a block that points AWS's SDK at moto on this machine
_OFFLINE_FLAGS = {"--dry-run", "--local", "--help", "-h"}
_OFFLINE_COMMANDS = {"validate", "plan", "schema", "init", "instances", "check", "completion", "import"}


def _reaches_aws(line: str) -> bool:
    """Whether a documented smtrain line would call AWS: a command that sends or follows a job, unless it runs
    here (--local, --dry-run); `import` of a launcher is offline, `import --job` is not."""
    for words in variants(line):
        if not words or set(words) & _OFFLINE_FLAGS:
            continue
        if words[0] not in _OFFLINE_COMMANDS or (words[0] == "import" and "--job" in words):
            return True
        if words[0] == "plan" and "--check" in words:  # the quota check reads Service Quotas
            return True
    return False


def shell_blocks(path: Path) -> list[str]:
    return [body for lang, body in _FENCE.findall(path.read_text(encoding="utf-8"))
            if lang in ("sh", "bash", "shell", "console")]


def test_every_block_that_reaches_aws_says_so_or_runs_against_moto_in_a_test() -> None:
    unmarked = []
    for path in DOCS:
        page = path.relative_to(ROOT).as_posix()
        for block in shell_blocks(path):
            first = block.strip().splitlines()[0]
            if any(page == p and first.startswith(f) for p, f in RUN_BY_TESTS) or NEEDS_AWS in block \
                    or MOTO_HERE in block:
                continue
            lines = [line for line in shell_lines_of(block) if _reaches_aws(line)]
            lines += [line for line in block.splitlines() if line.startswith("aws ")]  # AWS's own CLI
            if lines:
                unmarked.append(f"{page}: {lines[0]}")
    assert unmarked == []


def test_the_blocks_said_to_be_run_are_there_and_their_tests_too() -> None:
    for (page, first), test in RUN_BY_TESTS.items():
        assert any(b.strip().startswith(first) for b in shell_blocks(ROOT / page)), (page, first)
        assert (ROOT / test).is_file()


def test_what_reaches_aws_is_told_apart() -> None:
    assert _reaches_aws("smtrain submit job.yaml --wait")
    assert _reaches_aws("smtrain status|logs|wait|stop JOB")
    assert _reaches_aws("smtrain import --job NAME")
    assert not _reaches_aws("smtrain submit job.yaml --dry-run -o json")
    assert not _reaches_aws("smtrain submit job.yaml [--local]")  # the bracket taken as present
    assert not _reaches_aws("smtrain plan job.yaml --set compute.nodes=4")
    assert not _reaches_aws("smtrain import launch.py")
