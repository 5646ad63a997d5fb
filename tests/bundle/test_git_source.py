"""code.git: a repository made here (git init, commits, a branch) cloned, resolved and bundled exactly as a
source_dir; errors at their file:line with the right exit code. Offline: local paths and file:// URLs only,
and one address nothing listens on."""

from __future__ import annotations

import base64
import io
import json
import multiprocessing
import os
import shutil
import subprocess
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from smtrain.bundle.model import Bundle
from smtrain.bundle.request import make_bundle
from smtrain.plan import git_source
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from tests.spec.inprocess import run
from tests.support.moto_server import BUCKET, MotoServer, live_spec
from tests.support.specfiles import BASE_TEXT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git program")

FILES_MAIN = {"src/train.py": "print('main')\n", "src/requirements.txt": "numpy\n", "README.md": "demo\n",
              "src/.gitignore": "scratch/\n"}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """tmp_path/repo: main (commit `one`), then branch exp (commit `two`, train.py changed); main checked out
    again with an uncommitted edit, which never ships. The cache is tmp_path/cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    git_source.forget()
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch", "main")
    write(root, FILES_MAIN)
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "one")
    one = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "--quiet", "-b", "exp")
    write(root, {"src/train.py": "print('exp')\n"})
    git(root, "commit", "--quiet", "-am", "two")
    two = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "--quiet", "main")
    write(root, {"src/train.py": "print('uncommitted')\n", "src/scratch/notes.txt": "ignored\n"})
    return {"one": one, "two": two}


def spec_text(git_lines: str, code_more: str = "  entry_point: train.py\n  requirements: requirements.txt\n") -> str:
    return BASE_TEXT + "compute:\n  instance_type: ml.g5.xlarge\ncode:\n" + git_lines + code_more


def spec_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


def bundle_of(path: Path) -> Bundle:
    return make_bundle(build_plan(load_spec(path), load_catalog()))


def member(bundle: Bundle | bytes, name: str) -> str:
    data = bundle if isinstance(bundle, bytes) else bundle.data
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        handle = tar.extractfile(name)
        assert handle is not None
        return handle.read().decode()


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


# --------------------------------------------------------------------------- what ships


def test_branch_commit_and_default_branch_each_bundle_their_own_tree(tmp_path: Path, repo: dict[str, str]) -> None:
    ways = {"branch: exp": ("exp", repo["two"]), f"commit: {repo['one'][:7]}": ("main", repo["one"]),
            f"commit: \"{repo['two']}\"": ("exp", repo["two"]), "": ("main", repo["one"])}
    for line, (text, commit) in ways.items():
        extra = f"    {line}\n" if line else ""
        path = spec_file(tmp_path, spec_text(f"  git:\n    repository: repo\n    directory: src\n{extra}"))
        plan = build_plan(load_spec(path), load_catalog())
        bundle = make_bundle(plan)
        assert member(bundle, "train.py") == f"print('{text}')\n", line
        assert member(bundle, "requirements.txt") == "numpy\n"
        assert plan.git is not None and plan.git.commit == commit
        assert plan.environment["SMTRAIN_GIT_COMMIT"] == commit
        paths = {f.path for f in bundle.files}
        assert "README.md" not in paths and not any(p.startswith(("scratch/", ".git/")) for p in paths)
    assert plan.git.default_branch and plan.git.branch == "main"  # the last: no branch, no commit


def test_one_commit_gives_one_sha256_equal_to_a_source_dir_of_the_same_files(tmp_path: Path,
                                                                              repo: dict[str, str]) -> None:
    path = spec_file(tmp_path, spec_text(f"  git:\n    repository: repo\n    commit: {repo['one']}\n"
                                         "    directory: src\n"))
    first = bundle_of(path)
    again = bundle_of(path)  # from the cache: no fetch, the same checkout
    shutil.rmtree(tmp_path / "cache")
    fresh = bundle_of(path)
    plain = tmp_path / "plain"
    write(plain, {k.removeprefix("src/"): v for k, v in FILES_MAIN.items() if k.startswith("src/")})
    same_files = bundle_of(spec_file(tmp_path, spec_text("  source_dir: plain\n")))
    assert first.sha256 == again.sha256 == fresh.sha256 == same_files.sha256


def _plan_exp_then_move_it(tmp_path: Path, repo: dict[str, str]) -> Path:
    """A spec of branch exp, planned once (the cache holds commit two), then exp moved to a new commit."""
    path = spec_file(tmp_path, spec_text("  git:\n    repository: repo\n    branch: exp\n    directory: src\n"))
    assert build_plan(load_spec(path), load_catalog()).git.commit == repo["two"]
    root = tmp_path / "repo"
    git(root, "checkout", "--quiet", "--force", "exp")
    write(root, {"src/train.py": "print('three')\n"})
    git(root, "commit", "--quiet", "-am", "three")
    return path


def test_a_moved_branch_is_resolved_once_per_process(tmp_path: Path, repo: dict[str, str]) -> None:
    path = _plan_exp_then_move_it(tmp_path, repo)
    # A tuning run plans many trials: every one runs the commit the first one found.
    assert build_plan(load_spec(path), load_catalog()).git.commit == repo["two"]
    git_source.forget()  # a new run fetches the branch again
    assert member(bundle_of(path), "train.py") == "print('three')\n"


def _plan_after(start: Any, path: str, cache: str, results: Any) -> None:
    """One `smtrain plan` in a forked process (smtrain already imported: no second of start-up each), started
    with the others at once."""
    os.environ["XDG_CACHE_HOME"] = cache
    start.wait()
    try:
        proc = run("plan", path, "-o", "json")
        commit = json.loads(proc.stdout)["git"]["commit"] if proc.code == 0 else None
        results.put((proc.code, commit, proc.output[-500:]))
    except BaseException as exc:  # a child that dies says why, instead of leaving the parent to time out
        results.put((-1, None, f"{type(exc).__name__}: {exc}"))


@pytest.mark.slow  # 25 processes
def test_concurrent_plans_while_the_branch_moves_all_succeed(tmp_path: Path, repo: dict[str, str]) -> None:
    """24 plans at once against a repository whose branch another process keeps moving: each ends with exit
    0 and the checkout of a commit the branch had, whatever the order in which their fetches and pins meet
    in the shared cache (on the old code some failed with exit 2: "cannot lock ref")."""
    root = tmp_path / "repo"
    git(root, "checkout", "--quiet", "--force", "exp")
    contents: dict[str, str] = {repo["two"]: "print('exp')\n"}
    for i in range(6):
        write(root, {"src/train.py": f"print({i})\n"})
        git(root, "commit", "--quiet", "-am", f"move {i}")
        contents[git(root, "rev-parse", "HEAD")] = f"print({i})\n"
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(root), str(bare))
    moves = tmp_path / "origin.git.moves"
    # Another process moves the branch over and over, through every commit above, until it is stopped.
    mover = subprocess.Popen(
        ["sh", "-c", 'while :; do for c in "$@"; do git --git-dir "$0" update-ref refs/heads/exp "$c"; '
                     'echo >> "$0.moves"; done; done', str(bare), *contents],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    plans: list[Any] = []
    try:
        deadline = time.monotonic() + 60
        while not moves.exists():  # it has begun
            assert mover.poll() is None and time.monotonic() < deadline, "the branch mover did not start"
            time.sleep(0.01)
        path = spec_file(tmp_path, spec_text("  git:\n    repository: origin.git\n    branch: exp\n"
                                             "    directory: src\n"))
        fork = multiprocessing.get_context("fork")
        start, results = fork.Event(), fork.Queue()
        plans += [fork.Process(target=_plan_after, args=(start, str(path), str(tmp_path / "cache"), results))
                 for _ in range(24)]
        for plan in plans:
            plan.start()
        start.set()
        outcomes = [results.get(timeout=120) for _ in plans]
        for plan in plans:
            plan.join(timeout=60)
    finally:
        mover.terminate()
        mover.wait()
        for plan in plans:  # none outlives the test, whatever ended it
            if plan.is_alive():
                plan.kill()
                plan.join()
    assert [out for out in outcomes if out[0] != 0] == []
    trees = tmp_path / "cache" / "smtrain" / "git"
    for _, commit, _ in outcomes:
        assert commit in contents
        [tree] = trees.glob(f"*/trees/{commit}")
        assert (tree / "src" / "train.py").read_text() == contents[commit]
    assert not list(trees.glob("*/trees/.*"))  # no half-made checkout left behind


def test_a_ref_another_git_holds_locked_is_retried(tmp_path: Path, repo: dict[str, str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A git outside smtrain (the user's own `git gc`, a run on a system without fcntl) holds the branch's
    ref locked in the cache as the plan fetches: the fetch is tried again once the lock is gone, not exit 2."""
    path = _plan_exp_then_move_it(tmp_path, repo)
    [held] = (tmp_path / "cache").glob("smtrain/git/*/repo.git/refs/smtrain/heads/exp")
    lock = held.with_name("exp.lock")
    lock.write_text("")
    waits: list[float] = []

    def other_git_done(seconds: float) -> None:  # the other git ends while smtrain waits
        waits.append(seconds)
        lock.unlink()

    monkeypatch.setattr(git_source, "sleep", other_git_done, raising=False)
    git_source.forget()
    proc = run("plan", str(path), "-o", "json")
    assert proc.code == 0, proc.output
    assert json.loads(proc.stdout)["git"]["commit"] == git(tmp_path / "repo", "rev-parse", "HEAD")
    assert len(waits) == 1


def test_validate_reads_a_remote_repository_only_from_the_cache(tmp_path: Path, repo: dict[str, str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(git_source, "is_remote", lambda address: True)  # file:// standing in for a server
    url = (tmp_path / "repo").as_uri()
    path = spec_file(tmp_path, spec_text(f"  git:\n    repository: {url}\n    branch: exp\n    directory: src\n",
                                         "  entry_point: fit.py\n"))
    first = run("validate", str(path))
    assert first.code == 0 and "validate does not fetch it" in first.stderr, first.output
    assert not (tmp_path / "cache").exists()
    assert "fit.py not found in" in run("plan", str(path)).stderr  # plan fetches, and checks the code
    git_source.forget()
    again = run("validate", str(path))  # the commit fetched last, from the cache
    assert again.code == 2 and f"fit.py not found in {url} at {repo['two'][:12]}" in again.stderr, again.output


def test_plan_text_and_json_show_repository_and_commit(tmp_path: Path, repo: dict[str, str]) -> None:
    url = (tmp_path / "repo").as_uri()  # file://
    path = spec_file(tmp_path, spec_text(f"  git:\n    repository: {url}\n    branch: exp\n    directory: src\n"))
    text = run("plan", str(path))
    assert text.code == 0, text.output
    assert f"  code          git {url} (src) @ {repo['two']} (branch exp)" in text.stdout
    data = json.loads(run("plan", str(path), "-o", "json").stdout)
    assert data["git"] == {"repository": url, "branch": "exp", "default_branch": False, "commit": repo["two"],
                           "directory": "src"}
    assert data["program"]["environment"]["SMTRAIN_GIT_COMMIT"] == repo["two"]


def test_model_hook_in_a_git_repository(tmp_path: Path, repo: dict[str, str]) -> None:
    root = tmp_path / "repo"
    write(root, {"src/nets.py": "def build(num_classes):\n    return None\n"})
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "nets")
    hook = "training:\n  model: nets:{}\n"
    good = spec_file(tmp_path, spec_text("  git:\n    repository: repo\n    branch: main\n    directory: src\n",
                                         "") + hook.format("build"))
    assert run("plan", str(good)).code == 0
    bad = spec_file(tmp_path, good.read_text().replace("nets:build", "nets:buld"))
    proc = run("plan", str(bad))
    assert proc.code == 2 and "nets.py defines no buld (did you mean 'build'?)" in proc.stderr, proc.output
    data_hook = spec_file(tmp_path, good.read_text() + "  data: feeds:load\n")
    proc = run("plan", str(data_hook))
    assert proc.code == 2 and "data hook feeds:load: no feeds.py in the code.git checkout" in proc.stderr, proc.output


# --------------------------------------------------------------------------- the dry run and the server


@pytest.mark.slow  # as every submit that reaches the SageMaker SDK (tests/sagemaker/test_submit_live.py)
def test_dry_run_shows_the_commit_and_the_server_gets_that_bundle(aws: MotoServer, tmp_path: Path,
                                                                 repo: dict[str, str]) -> None:
    path = live_spec(tmp_path, {"code": {"git": {"repository": "repo", "branch": "exp", "directory": "src"},
                                         "entry_point": "train.py"}})
    env = aws.env(tmp_path, XDG_CACHE_HOME=str(tmp_path / "cache"))
    dry = run("submit", str(path), "--dry-run", "-o", "json", env=env)
    assert dry.code == 0, dry.output
    dry_data = json.loads(dry.stdout)
    summary = {"repository": "repo", "branch": "exp", "default_branch": False, "commit": repo["two"],
               "directory": "src"}
    assert dry_data["upload"]["git"] == summary
    assert dry_data["request"]["Environment"]["SMTRAIN_GIT_COMMIT"] == repo["two"]
    sha = dry_data["upload"]["sha256"]

    sent = run("submit", str(path), "-o", "json", env=env)
    assert sent.code == 0, sent.output
    submitted = json.loads(sent.stdout)
    assert submitted["upload"]["sha256"] == sha and submitted["upload"]["git"] == summary
    key = f"out/source/{sha}/sourcedir.tar.gz"
    body = aws.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert member(body, "train.py") == "print('exp')\n"
    [received] = aws.control.create_requests
    assert received["Environment"]["SMTRAIN_GIT_COMMIT"] == repo["two"]


# --------------------------------------------------------------------------- errors


def error_at(proc, path: Path, line: int, field: str) -> str:
    """The one problem's message, checked to sit at `path`:`line` and `field`, exit 2."""
    assert proc.code == 2, proc.output
    assert "Traceback" not in proc.output and proc.exception is None
    [error] = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    prefix = f"error: {path}:{line}:"
    assert error.startswith(prefix) and f": {field}: " in error, error
    return error


@pytest.mark.parametrize(("lines", "field", "needle", "message"), [
    ("    repository: repo\n    branch: nope\n", "code.git.branch", "branch: nope", "no branch nope in repo"),
    ("    repository: repo\n    commit: 0123456789abcdef\n", "code.git.commit", "commit:",
     "no commit 0123456789abcdef in repo"),
    ("    repository: repo\n    commit: xyz\n", "code.git.commit", "commit:", "is not a commit: 7 to 40 hex"),
    ("    repository: repo\n    branch: main\n    directory: lib\n", "code.git.directory", "directory:",
     "no directory lib in repo at "),
    ("    repository: repo\n    directory: ../up\n", "code.git.directory", "directory:", "inside the repository"),
    ("    repository: repo\n    branch: main\n    commit: abcdef1\n", "code.git.commit", "commit:", "not both"),
    ("    repository: missing\n", "code.git.repository", "repository:", "no such directory: missing"),
    ("    repository: repo\n    branch: -x\n", "code.git.branch", "branch:", "is not a branch name"),
])
def test_spec_problems_are_at_their_field(tmp_path: Path, repo: dict[str, str], lines: str, field: str,
                                          needle: str, message: str) -> None:
    path = spec_file(tmp_path, spec_text("  git:\n" + lines))
    for command in ("validate", "plan"):
        error = error_at(run(command, str(path)), path, line_of(path, needle), field)
        assert message in error


def test_git_and_source_dir_together_and_a_missing_entry_point(tmp_path: Path, repo: dict[str, str]) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("")
    (tmp_path / "src" / "requirements.txt").write_text("")
    both = spec_file(tmp_path, spec_text("  source_dir: src\n  git:\n    repository: repo\n"))
    assert "give code.source_dir or code.git, not both" in error_at(run("validate", str(both)), both,
                                                                    line_of(both, "repository:"), "code.git")
    missing = spec_file(tmp_path, spec_text("  git: {repository: repo, directory: src}\n",
                                            "  entry_point: fit.py\n"))
    error = error_at(run("plan", str(missing)), missing, line_of(missing, "entry_point"), "code.entry_point")
    assert f"fit.py not found in repo at {repo['one'][:12]}" in error


def test_unreachable_remote_is_one_line_exit_4_without_its_credentials(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    token = "s3cretTokenValue42"
    url = f"https://ci-bot:{token}@127.0.0.1:1/team/models.git"  # nothing listens on port 1
    path = spec_file(tmp_path, spec_text(f"  git:\n    repository: {url}\n    branch: main\n"))
    # validate fetches nothing: the spec is valid, the code unchecked, and it says so.
    checked = run("validate", str(path))
    assert checked.code == 0, checked.output
    assert "validate does not fetch it" in checked.stderr and token not in checked.output
    assert not (tmp_path / "cache").exists()

    proc = run("plan", str(path))
    assert proc.code == 4, proc.output
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: cannot fetch https://127.0.0.1:1/team/models.git: ")
    assert "git ls-remote" in line and token not in proc.output and "Traceback" not in proc.output


def test_without_the_git_program(tmp_path: Path, repo: dict[str, str]) -> None:
    path = spec_file(tmp_path, spec_text("  git:\n    repository: repo\n"))
    empty = tmp_path / "no-bin"
    empty.mkdir()
    error = error_at(run("plan", str(path), env={"PATH": str(empty)}), path, line_of(path, "repository:"),
                     "code.git.repository")
    assert "code.git needs the git program" in error


# --------------------------------------------------------------------------- credentials in the URL

REAL_GIT = shutil.which("git") or "git"
SERVER_PATH = os.environ.get("PATH", "")  # the server's git never meets the shim the test puts on smtrain's PATH
USER, TOKEN = "ci-bot", "s3cret/Token+42%"  # as the URL carries it: percent-encoded
TOKEN_IN_URL = "s3cret%2FToken%2B42%25"


def _command_lines() -> list[bytes]:
    """Every process's command line on this machine, as `ps` shows them to any user."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "cmdline").read_bytes())
            except OSError:
                pass  # gone meanwhile
    return found


class _SmartHttp(BaseHTTPRequestHandler):
    """git's smart HTTP (git http-backend as CGI), behind Basic authentication. While a request of an
    authenticated fetch is answered, the git processes fetching are alive: their command lines are read then."""

    server: Any

    def do_GET(self) -> None:  # noqa: N802 (http.server's names)
        self._answer()

    def do_POST(self) -> None:  # noqa: N802
        self._answer()

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        expected = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()
        if self.headers.get("Authorization") != expected:
            self.server.refused += 1
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.server.command_lines.extend(_command_lines())
        path, _, query = self.path.partition("?")
        env = {"PATH": SERVER_PATH, "GIT_PROJECT_ROOT": str(self.server.root),
               "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
               "REQUEST_METHOD": self.command, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": USER, "REMOTE_ADDR": "127.0.0.1",
               "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", "")}
        out = subprocess.run([REAL_GIT, "http-backend"], input=body, env=env, capture_output=True,
                             check=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        headers = [line.split(": ", 1) for line in head.decode().split("\r\n") if line]
        status = next((int(value.split()[0]) for name, value in headers if name.lower() == "status"), 200)
        self.send_response(status)
        for name, value in headers:
            if name.lower() != "status":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads command lines from /proc")
def test_url_credentials_reach_git_through_a_helper_never_its_command_line(tmp_path: Path, repo: dict[str, str]
                                                                           ) -> None:
    """A fetch over smart HTTP that needs the URL's user and token: it succeeds, and neither is on the command
    line of smtrain's git (a PATH shim records its arguments) or of any process while the fetch runs, nor in
    the output or the cache."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.txt"
    bin_dir.mkdir()
    shim = bin_dir / "git"
    shim.write_text(f"""#!/bin/sh
{{ echo call; for a in "$@"; do printf 'arg %s\\n' "$a"; done
  env | sed -n 's/^\\(SMTRAIN_GIT_[A-Z]*\\)=.*/env \\1/p'; }} >> '{calls}'
exec '{REAL_GIT}' "$@"
""")
    shim.chmod(0o755)
    git(tmp_path, "clone", "--quiet", "--bare", str(tmp_path / "repo"), str(tmp_path / "served" / "origin.git"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SmartHttp)
    server.root, server.command_lines, server.refused = tmp_path / "served", [], 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        address = f"http://127.0.0.1:{server.server_port}/origin.git"
        url = address.replace("//", f"//{USER}:{TOKEN_IN_URL}@", 1)
        path = spec_file(tmp_path, spec_text(f"  git:\n    repository: {url}\n    directory: src\n"))
        proc = run("plan", str(path), "-o", "json", env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
    assert proc.code == 0, proc.output
    assert json.loads(proc.stdout)["git"]["commit"] == repo["one"]  # the default branch, main
    assert server.refused >= 1 and server.command_lines  # git asked, and was answered only with the token

    secrets = (TOKEN, TOKEN_IN_URL, f"{USER}:")
    records = calls.read_text().split("call\n")[1:]
    arguments = [line[4:] for record in records for line in record.splitlines() if line.startswith("arg ")]
    assert not [a for a in arguments if any(s in a for s in secrets)]
    remote = [r for r in records if f"arg {address}\n" in r]
    assert len(remote) == 2  # ls-remote for the default branch, then the fetch: each with the bare address
    assert all("env SMTRAIN_GIT_PASSWORD\n" in r for r in remote)
    assert not [r for r in records if r not in remote and "env SMTRAIN_GIT" in r]  # for the remote only
    assert not [c for c in server.command_lines if any(s.encode() in c for s in secrets)]
    assert not any(s in proc.output for s in secrets)
    cached = [f for f in (tmp_path / "cache").rglob("*") if f.is_file()]
    assert cached and not [f for f in cached if any(s.encode() in f.read_bytes() for s in secrets)]


@pytest.mark.parametrize(("asked", "answered"), [("git.example.com:8443", True), ("elsewhere.example.com", False),
                                                 ("git.example.com", False)])
def test_the_credential_helper_answers_only_for_the_urls_host(asked: str, answered: bool) -> None:
    """A remote that redirects git to another host, which then asks for a password, gets none of the URL's."""
    address, credentials = git_source._without_credentials("https://me:s3cr%2Ft@git.example.com:8443/team/repo.git")
    assert address == "https://git.example.com:8443/team/repo.git"
    env = {**os.environ, **git_source._GIT_ENV, **credentials, "GIT_ASKPASS": "true", "SSH_ASKPASS": "true"}
    proc = subprocess.run(["git", *git_source._CREDENTIAL_HELPER, "credential", "fill"], env=env, text=True,
                          input=f"protocol=https\nhost={asked}\npath=team/repo.git\n\n", capture_output=True)
    assert ("password=s3cr/t" in proc.stdout) is answered, proc.stdout + proc.stderr
    assert ("username=me" in proc.stdout) is answered
