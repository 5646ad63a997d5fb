"""What a bundle is made of: the built archive, its files, the files planned for it, its one error type."""

from __future__ import annotations

from dataclasses import dataclass, field

ARCHIVE_NAME = "sourcedir.tar.gz"
REQUIREMENTS_NAME = "requirements.txt"

Origin = str  # "entrypoint" | "source" | "requirements"


class BundleError(ValueError):
    """The code cannot be bundled; the message is meant for the user as is.

    `field` is the spec field the problem is about, for the file:line:column of the message.
    """

    def __init__(self, message: str, field: tuple[str, ...] = ("code", "source_dir")) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class BundleFile:
    """One regular file of the archive."""

    path: str  # archive path, POSIX
    size: int  # uncompressed bytes
    origin: str  # "entrypoint" | "source" | "requirements"


@dataclass(frozen=True)
class Bundle:
    """A built ``sourcedir.tar.gz``, held in memory."""

    data: bytes = field(repr=False)  # the .tar.gz bytes
    sha256: str  # hex digest of data
    files: tuple[BundleFile, ...]  # regular files, in archive order
    skipped: tuple[str, ...] = ()  # special files (sockets, FIFOs...) left out, archive paths
    warnings: tuple[str, ...] = ()  # for the user: files skipped, large files packed

    @property
    def size(self) -> int:
        """Compressed size in bytes."""
        return len(self.data)

    @property
    def uncompressed_size(self) -> int:
        """Sum of the file sizes, before tar overhead and compression."""
        return sum(f.size for f in self.files)


@dataclass
class PlannedFile:
    path: str  # archive path
    source: str  # file to read
    size: int  # from stat: for the size checks and warnings; the archive records what it reads
    executable: bool
    origin: Origin
    # A file smtrain made (the script of a notebook entry point): its bytes; `source` names what it was made from.
    content: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class PlannedBundle:
    """Every file the archive will hold, checked (secrets, links, clashes, size bound), not yet packed."""

    files: tuple[PlannedFile, ...]  # archive order
    skipped: tuple[str, ...]  # special files left out, archive paths
    warnings: tuple[str, ...]  # for the user, one message each
    max_size: int | None  # the compressed size limit the archive is held to
