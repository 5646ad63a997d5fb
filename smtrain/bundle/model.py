"""What a bundle is made of: the built archive, its files, the files planned for it, its one error type."""

from __future__ import annotations

from dataclasses import dataclass, field

ARCHIVE_NAME = "sourcedir.tar.gz"
REQUIREMENTS_NAME = "requirements.txt"

Origin = str  # "entrypoint" | "source" | "requirements"


class BundleError(ValueError):
    """The code cannot be bundled; the message is meant for the user as is."""


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
    size: int  # from stat, used only to name large files when the size limit stops us
    executable: bool
    origin: Origin
