"""code.git: the repository cloned here, the commit it names resolved once, and a checkout of that commit
that the job is then planned and bundled from as if it were code.source_dir.

Why here, in the plan stage: the plan is the first stage that reads the user's code (model and data
hooks, declared metrics, the preflight scan), and which commit runs is a decision the plan shows. The
bundle stage imports the plan, so it packs the very checkout the plan read; resolve() hands back the
spec with code.source_dir naming that checkout's directory (absolute), so every reader of the code, and
bundle.build's walk, ignore rules, secret guard and archive, run unchanged. The same commit gives the
same bytes, and so the same sha256, as a source_dir holding the same files. The SDK's git_config is not
used: it would clone again at fit() time, after the dry run.

The cache, $XDG_CACHE_HOME/smtrain/git/<sha256 of the address>/ (else ~/.cache/...):

    repo.git/          a bare repository; fetched into, never cloned with the address (a URL's credentials
                       would stay in its config); refs/smtrain/heads/* the branches fetched,
                       refs/smtrain/pins/* every commit checked out (so no gc drops it)
    trees/<commit>/    one checkout per commit, made once (under a temporary name, then renamed) and never
                       changed: two runs of different commits never share a working tree
    lock               held (fcntl) while a run fetches, pins and checks out: concurrent runs (a tuning
                       run's trials, CI jobs) wait for each other rather than race on the same refs

Network: a commit already in the cache is used without fetching; a branch is fetched each run (once per
process); a local repository (a path, or file://) is read, never fetched over a network. `validate`
passes fetch=False: then a remote repository is used only as far as the cache answers, with a note.

Credentials: git is given an http(s) URL without its user and password; a credential helper given on
git's command line (its text names two variables, never their values) answers git's question from the
git process's environment. No argument of any process carries them (`ps` shows arguments to every
user), and nothing is written to disk: the user's own helpers are not asked, nor told to store them.

Errors: a spec problem at code.git.* (exit 2) for what the spec names wrongly (a branch, a commit, a
directory, a local path, a code.requirements path out of the checkout); UserError with exit 4 for a remote
that cannot be reached or read; never either for a race with another run (see lock above; git's own lock
errors are retried). Addresses are shown without their credentials, and git's own messages pass through
smtrain.redact.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from time import sleep
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

try:
    import fcntl
except ImportError:  # Windows: git's own lock errors are retried instead
    fcntl = None  # type: ignore[assignment]

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.redact import mask_text, remember
from smtrain.spec.model import LoadedSpec, code_file_problems
from smtrain.spec.problems import Problem, SpecError

CACHE_ENV = "XDG_CACHE_HOME"
# What the container gets, so a job (and its describe) says which code it ran.
REPOSITORY_VARIABLE = "SMTRAIN_GIT_REPOSITORY"
COMMIT_VARIABLE = "SMTRAIN_GIT_COMMIT"

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_SCP = re.compile(r"[^/@:]+@[^/:]+:")  # git@github.com:owner/repo.git
_NOT_FETCHED = "validate does not fetch it; `smtrain plan` does, and checks the code"
# Never wait for a password prompt: a job spec runs unattended (CI) as often as at a terminal.
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
# A URL's user and password reach git the way a credential helper gives them: from these variables of the
# git process (which only its user can read), never on a command line, where every user's `ps` shows them.
_USER_VARIABLE, _PASSWORD_VARIABLE = "SMTRAIN_GIT_USERNAME", "SMTRAIN_GIT_PASSWORD"
_HOST_VARIABLE = "SMTRAIN_GIT_HOST"  # the URL's host[:port]: a redirect to another host gets nothing
# The first empty value drops the helpers the user configured: the URL's credentials are the ones to use
# (as git does with a URL that carries them), and none is handed to a helper that stores what it is given.
# The helper reads git's question (`host=...` lines up to an empty one) and answers only for the URL's host.
_CREDENTIAL_HELPER = ("-c", "credential.helper=", "-c",
                      "credential.helper=!f() { test \"$1\" = get || return 0; h=; "
                      "while IFS= read -r l && [ -n \"$l\" ]; do case \"$l\" in host=*) h=\"${l#host=}\";; esac; "
                      f"done; [ \"$h\" = \"${_HOST_VARIABLE}\" ] && printf 'username=%s\\npassword=%s\\n' "
                      f"\"${_USER_VARIABLE}\" \"${_PASSWORD_VARIABLE}\"; return 0; }}; f")
# Schemes whose transport takes a user and password (git's http.c); ssh takes the user from the URL.
_PASSWORD_SCHEMES = ("http", "https", "ftp", "ftps")
# What git says when another git holds a lock in the cache's repository (a run without fcntl, the user's
# own `git gc`): a race, retried, never the spec's fault.
_LOCKED = re.compile(r"cannot lock ref|Unable to create '[^']*\.lock'|unable to update local ref")
_LOCK_RETRIES = (0.1, 0.3, 1.0)  # seconds before each retry
# Branches resolved in this process: (cache key, branch or "") -> (commit, branch name). A tuning run plans
# many trials; they all take the commit the first one found.
_resolved: dict[tuple[str, str], tuple[str, str | None]] = {}


@dataclass(frozen=True)
class GitCheckout:
    """Which code a job runs: where it came from, the exact commit, and its directory here."""

    repository: str  # as shown: credentials removed
    branch: str | None  # the branch resolved; None when a commit was given
    default_branch: bool  # the branch is the repository's default (the spec named none)
    commit: str | None  # 40 hex; None: not resolved (validate, a remote not in the cache)
    directory: str | None
    root: Path | None  # the code's directory in the checkout
    note: str | None = None  # how it was resolved, when that is worth saying
    checkout: Path | None = None  # the checkout's top directory (root is inside it)

    def summary(self) -> dict[str, Any]:
        return {"repository": self.repository, "branch": self.branch, "default_branch": self.default_branch,
                "commit": self.commit, "directory": self.directory}

    def environment(self) -> dict[str, str]:
        if self.commit is None:
            return {}
        return {REPOSITORY_VARIABLE: self.repository, COMMIT_VARIABLE: self.commit}

    def line(self) -> str:
        """One line for the plan: the repository, the commit, and how it was chosen."""
        where = f" ({self.directory})" if self.directory else ""
        how = ("default branch " + (self.branch or "")).strip() if self.default_branch else (
            f"branch {self.branch}" if self.branch else "commit")
        commit = self.commit or "not resolved"
        return f"{self.repository}{where} @ {commit} ({how})" + (f"; {self.note}" if self.note else "")


def is_remote(repository: str) -> bool:
    """A URL other than file://, or git's scp-like user@host:path."""
    if _URL.match(repository):
        return not repository.lower().startswith("file://")
    return bool(_SCP.match(repository))


def shown(repository: str) -> str:
    """The address without the user and password a URL may carry (which are also registered as secrets)."""
    if not _URL.match(repository):
        return repository
    parts = urlsplit(repository)
    if "@" not in parts.netloc:
        return repository
    userinfo, _, host = parts.netloc.rpartition("@")
    # user:password, or a token alone as the user: masked wherever else it turns up (git's own messages).
    remember({"password": userinfo.partition(":")[2] or userinfo})
    return urlunsplit(parts._replace(netloc=host))


def cache_root() -> Path:
    """$XDG_CACHE_HOME/smtrain/git, else ~/.cache/smtrain/git."""
    base = os.environ.get(CACHE_ENV, "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"  # the XDG spec ignores a relative one
    return root / "smtrain" / "git"


class _GitFailed(Exception):
    def __init__(self, stderr: str) -> None:
        super().__init__(stderr)
        self.stderr = stderr

    @property
    def reason(self) -> str:
        lines = [ln.strip() for ln in self.stderr.splitlines() if ln.strip()]
        fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
        return mask_text((fatal or lines or ["git failed"])[-1])


def _git(*args: str, cwd: Path | None = None, credentials: dict[str, str] | None = None) -> str:
    """git's stdout; `credentials`: the user and password for the remote, given by a helper (see above)."""
    helper = _CREDENTIAL_HELPER if credentials else ()
    env = {**os.environ, **_GIT_ENV, **_ssh_batch(), **(credentials or {})}
    for wait in (*_LOCK_RETRIES, None):
        try:
            done = subprocess.run(["git", *helper, *args], cwd=cwd, capture_output=True, text=True,
                                  errors="replace", env=env, stdin=subprocess.DEVNULL, check=False)
        except FileNotFoundError:
            raise _NoGit from None
        if done.returncode == 0:
            return done.stdout
        if wait is None or not _LOCKED.search(done.stderr):
            raise _GitFailed(done.stderr)
        sleep(wait)
    raise AssertionError("unreachable")


def _without_credentials(url: str) -> tuple[str, dict[str, str]]:
    """The URL git is given, and the user and password it gets from the helper.

    http(s) and ftp(s): the URL without its user and password, which the helper supplies (decoded, as git
    decodes them). Other schemes (ssh://user@host) keep the user, which their transport needs, and drop a
    password, which they never use.
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, {}
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    if parts.scheme.lower() in _PASSWORD_SCHEMES:
        remember({"password": unquote(password or user)})  # as git may show it: decoded
        return urlunsplit(parts._replace(netloc=host)), {_USER_VARIABLE: unquote(user),
                                                         _PASSWORD_VARIABLE: unquote(password),
                                                         _HOST_VARIABLE: host}
    return urlunsplit(parts._replace(netloc=f"{user}@{host}" if user else host)), {}


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    """One smtrain run at a time in a cache directory: concurrent fetches of a moving branch (a tuning run's
    trials, CI jobs) would otherwise fail to update the same refs. Held while a run fetches, pins and checks
    out; the wait is the other run's fetch, which this run would have made too."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "lock", "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # the lock goes with the file's close


def _ssh_batch() -> dict[str, str]:
    """ssh fails instead of asking for a passphrase or host key, unless the user chose an ssh command."""
    if "GIT_SSH_COMMAND" in os.environ or "GIT_SSH" in os.environ:
        return {}
    return {"GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}


class _NoGit(Exception):
    pass


class _Resolver:
    """One resolution of code.git; problems are reported at its fields."""

    def __init__(self, loaded: LoadedSpec, fetch: bool) -> None:
        git = loaded.spec.code.git
        assert git is not None
        self.loaded, self.git, self.fetch = loaded, git, fetch
        self.remote = is_remote(git.repository)
        self.credentials: dict[str, str] = {}
        if self.remote and _URL.match(git.repository):
            self.address, self.credentials = _without_credentials(git.repository)
        else:
            self.address = git.repository if self.remote else self._local_address()
        self.shown = shown(git.repository)
        self.key = hashlib.sha256(self._key_text().encode()).hexdigest()[:24]
        self.home = cache_root() / self.key
        self.repo = self.home / "repo.git"

    def _local_address(self) -> str:
        text = self.git.repository
        if text.lower().startswith("file://"):
            return text
        return str(self.loaded.path(os.path.expanduser(text)))  # relative to the spec file

    def _key_text(self) -> str:
        # The address without credentials: a new token reuses the cache.
        return shown(self.address) if self.remote else self.address

    def _remote_git(self, *args: str) -> str:
        return _git(*args, credentials=self.credentials)

    def problem(self, field: str, message: str) -> SpecError:
        return SpecError([self.loaded.problem(("code", "git", field), message)])

    def unreachable(self, exc: _GitFailed) -> Exception:
        if not self.remote:
            return self.problem("repository", f"cannot read the git repository {self.shown}: {exc.reason}")
        return UserError(f"cannot fetch {self.shown}: {exc.reason}; check the address and your access to it "
                         f"(git ls-remote {self.shown})", exit_codes.API)

    def run(self) -> GitCheckout:
        if not self.remote and not self.git.repository.lower().startswith("file://"):
            path = Path(self.address)
            if not path.exists():
                raise self.problem("repository", f"no such directory: {self.git.repository}")
        if not self.fetch and self.remote and not self.repo.is_dir():
            return self._unresolved(_NOT_FETCHED)
        with _locked(self.home):
            self._ensure_repo()
            commit, branch, note = self._commit()
            if commit is None:
                return self._unresolved(note)
            tree = self._tree(commit)
        root = tree
        directory = self.git.directory
        if directory not in (None, "", "."):
            root = tree / directory
            real = os.path.realpath(root)
            if not root.is_dir() or not (real + os.sep).startswith(os.path.realpath(tree) + os.sep):
                raise self.problem("directory", f"no directory {directory} in {self.shown} at {commit[:12]}")
        return GitCheckout(self.shown, branch, self.git.branch is None and self.git.commit is None, commit,
                           directory, root, note, tree)

    def _unresolved(self, note: str | None) -> GitCheckout:
        return GitCheckout(self.shown, self.git.branch, self.git.branch is None and self.git.commit is None,
                           None, self.git.directory, None, note)

    def _ensure_repo(self) -> None:
        if self.repo.is_dir():
            return
        tmp = Path(tempfile.mkdtemp(prefix="repo.", dir=self.home))
        _git("init", "--quiet", "--bare", str(tmp))
        try:
            tmp.rename(self.repo)
        except OSError:  # another run made it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)

    def _in_repo(self, *args: str) -> str:
        return _git("--git-dir", str(self.repo), *args)

    def _has_commit(self, commit: str) -> str | None:
        try:
            return self._in_repo("rev-parse", "--verify", "--quiet", "--end-of-options",
                                 f"{commit}^{{commit}}").strip() or None
        except _GitFailed:
            return None

    def _fetch(self, *refspecs: str) -> None:
        self._remote_git("--git-dir", str(self.repo), "fetch", "--quiet", "--no-tags", "--", self.address, *refspecs)

    def _commit(self) -> tuple[str | None, str | None, str | None]:
        """(commit, branch, note)."""
        if self.git.commit is not None:
            found = self._pinned(self.git.commit.lower())
            return found, None, None if found else _NOT_FETCHED
        cache_key = (self.key, self.git.branch or "")
        if cache_key in _resolved:
            commit, branch = _resolved[cache_key]
            return commit, branch, None
        if not self.fetch and self.remote:
            return self._cached_branch()
        branch = self.git.branch or self._default_branch()
        try:
            self._fetch(f"+refs/heads/{branch}:refs/smtrain/heads/{branch}")
        except _GitFailed as exc:
            if "couldn't find remote ref" in exc.stderr:
                raise self.problem("branch", f"no branch {branch} in {self.shown}") from None
            raise self.unreachable(exc) from None
        commit = self._has_commit(f"refs/smtrain/heads/{branch}")
        assert commit is not None
        self._pin(commit)
        _resolved[cache_key] = (commit, branch)
        return commit, branch, None

    def _cached_branch(self) -> tuple[str | None, str | None, str | None]:
        branch = self.git.branch
        if branch is None:
            try:
                branch = self._in_repo("symbolic-ref", "--short", "refs/smtrain/default").strip() or None
            except _GitFailed:
                branch = None
            branch = branch.removeprefix("smtrain/heads/") if branch else None
        commit = self._has_commit(f"refs/smtrain/heads/{branch}") if branch else None
        if commit is None:
            return None, branch, _NOT_FETCHED
        return commit, branch, "validate does not fetch: checked as last fetched; `smtrain plan` fetches it"

    def _default_branch(self) -> str:
        try:
            out = self._remote_git("ls-remote", "--symref", "--", self.address, "HEAD")
        except _GitFailed as exc:
            raise self.unreachable(exc) from None
        found = re.search(r"^ref: refs/heads/(\S+)\s+HEAD$", out, re.MULTILINE)
        if found is None:
            raise self.problem("branch", f"{self.shown} names no default branch (an empty repository?): "
                                         "set code.git.branch or code.git.commit")
        branch = found.group(1)
        try:
            self._in_repo("symbolic-ref", "refs/smtrain/default", f"refs/smtrain/heads/{branch}")
        except _GitFailed:
            pass  # only validate's offline answer needs it
        return branch

    def _pinned(self, commit: str) -> str | None:
        found = self._has_commit(commit)
        if found is None and (self.fetch or not self.remote):
            try:
                self._fetch("+refs/heads/*:refs/smtrain/heads/*", "+refs/tags/*:refs/smtrain/tags/*")
            except _GitFailed as exc:
                raise self.unreachable(exc) from None
            found = self._has_commit(commit)
            if found is None and len(commit) == 40:
                try:  # a commit no branch or tag reaches: servers that allow it send it by name
                    self._fetch(commit)
                    found = self._has_commit(commit)
                except _GitFailed:
                    found = None
            if found is None:
                raise self.problem("commit", f"no commit {commit} in {self.shown} (its branches and tags "
                                             "were fetched)")
        elif found is None:
            return None
        if not found.startswith(commit):  # e.g. a tag or branch named like hex
            raise self.problem("commit", f"{commit} is not a commit of {self.shown}")
        self._pin(found)
        return found

    def _pin(self, commit: str) -> None:
        self._in_repo("update-ref", f"refs/smtrain/pins/{commit}", commit)

    def _tree(self, commit: str) -> Path:
        trees = self.home / "trees"
        tree = trees / commit
        if (tree / ".git").exists():
            return tree
        trees.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{commit[:12]}.", dir=trees))
        try:
            # --shared: the objects stay in repo.git; the checkout gets its own .git, so the bundle reads
            # the repository's .gitignore files as it does for a source_dir in a working tree.
            _git("clone", "--quiet", "--shared", "--no-checkout", "--", str(self.repo), str(tmp))
            _git("-c", "core.autocrlf=false", "-c", "advice.detachedHead=false", "checkout", "--quiet",
                 "--detach", commit, cwd=tmp)
            try:
                tmp.rename(tree)
            except OSError:  # another run made it meanwhile: the same commit, the same files
                pass
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return tree


def checkout(loaded: LoadedSpec, *, fetch: bool = True) -> GitCheckout | None:
    """Resolve and check out code.git (None without it); raise SpecError or UserError (exit 4)."""
    if loaded.spec.code.git is None:
        return None
    resolver = _Resolver(loaded, fetch)
    try:
        return resolver.run()
    except _NoGit:
        raise resolver.problem("repository", "code.git needs the git program: install git, or use "
                                             "code.source_dir") from None
    except _GitFailed as exc:
        raise resolver.unreachable(exc) from None


def resolve(loaded: LoadedSpec, *, fetch: bool = True) -> tuple[LoadedSpec, GitCheckout | None]:
    """The spec with code.source_dir naming the checkout's code directory, and the checkout.

    Unchanged without code.git, or when the commit could not be resolved (validate, offline).
    """
    found = checkout(loaded, fetch=fetch)
    if found is None or found.root is None:
        return loaded, found
    where = f"{found.repository} at {found.commit[:12]}" if found.commit else found.repository
    problems: list[Problem] = [*code_file_problems(loaded, found.root, where),
                               *_requirements_outside(loaded, found, where)]
    if problems:
        raise SpecError(problems)
    spec = loaded.spec
    code = spec.code.model_copy(update={"source_dir": str(found.root)})
    return dataclasses.replace(loaded, spec=spec.model_copy(update={"code": code})), found


def _requirements_outside(loaded: LoadedSpec, found: GitCheckout, where: str) -> list[Problem]:
    """A relative code.requirements is read from the checkout, beside the code: a path that leaves the checkout
    would read smtrain's cache, never a file of the user's. (Links are the bundle's to judge: it names where
    one leads.)"""
    name = loaded.spec.code.requirements
    if not name or os.path.isabs(name) or found.root is None or found.checkout is None:
        return []
    top = os.path.abspath(found.checkout)
    path = os.path.normpath(os.path.join(found.root, name))
    if path == top or path.startswith(top.rstrip(os.sep) + os.sep):
        return []
    return [loaded.problem(("code", "requirements"), f"{name} is not inside {where}: with code.git, "
                           "code.requirements names a file of the repository, relative to code.git.directory")]


def plan_environment(loaded: LoadedSpec, git: GitCheckout,
                     environment: dict[str, str]) -> tuple[dict[str, str], list[Problem], list[Problem]]:
    """The job's environment with the repository and commit added; problems for a spec variable of the same
    name; the checkout's note as a warning."""
    added = git.environment()
    clashes = [loaded.problem(("environment", name), f"smtrain sets {name} for this job (from code.git): "
                                                     "remove it from environment:")
               for name in added if name in loaded.spec.environment]
    notes = [loaded.problem(("code", "git"), f"{git.repository}: {git.note}")] if git.note else []
    return {**environment, **added}, clashes, notes


def forget() -> None:
    """Tests only: resolve branches afresh."""
    _resolved.clear()
