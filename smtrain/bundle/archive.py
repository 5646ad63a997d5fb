"""The archive bytes: a PAX tar written straight into a gzip stream, the same bytes for the same files.

Entries are sorted by path component; every entry has mtime BUNDLE_MTIME (1980-01-01T00:00:00Z),
uid/gid 0 and empty owner names; files are 0o644, or 0o755 when any execute bit is set, directories
0o755; the gzip header carries mtime 0, no file name and OS "unknown", and the deflate level is
fixed. Caveat: the compressed bytes come from the platform's zlib, so another zlib implementation
(zlib-ng, say) could compress the same tar differently; that only costs a second upload.
"""

from __future__ import annotations

import io
import os
import struct
import tarfile
import zlib

from smtrain.bundle.model import BundleError, BundleFile, PlannedFile

# 1980-01-01T00:00:00Z: the usual reproducible-build epoch; some tools read 0 as "no time".
BUNDLE_MTIME = 315532800
COMPRESS_LEVEL = 6


class TooLarge(Exception):
    def __init__(self, compressed: int) -> None:
        super().__init__(compressed)
        self.compressed = compressed


class TarGzWriter:
    """Writes tar entries straight into an in-memory gzip stream with a fixed header.

    Headers come from TarInfo.tobuf; the framing (512-byte blocks, two zero blocks, padding to
    a 10 KiB record) is what tarfile.TarFile writes, without its per-member bookkeeping.
    """

    _CHUNK = 1 << 20  # compress in large pieces: thousands of tiny calls cost more

    def __init__(self, stop_after: int | None) -> None:
        self._out = io.BytesIO()
        # Magic, deflate, no flags (so no file name), mtime 0, XFL 0, OS 255 ("unknown").
        self._out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
        self._deflate = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._pending = bytearray()
        self._crc = 0
        self._raw = 0
        self._stop_after = stop_after

    def add(self, info: tarfile.TarInfo, content: bytes = b"") -> None:
        self.add_header(info)
        self.add_data(content)
        self.end_member(len(content))

    def add_header(self, info: tarfile.TarInfo) -> None:
        self._pending += info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")

    def add_data(self, data: bytes) -> None:
        self._pending += data
        if len(self._pending) >= self._CHUNK:
            self._flush()

    def end_member(self, size: int) -> None:
        self._pending += bytes(-size % tarfile.BLOCKSIZE)

    def _flush(self) -> None:
        chunk = bytes(self._pending)
        self._pending.clear()
        self._crc = zlib.crc32(chunk, self._crc)
        self._raw += len(chunk)
        self._out.write(self._deflate.compress(chunk))
        if self._stop_after is not None and self._out.tell() > self._stop_after:
            raise TooLarge(self._out.tell())

    def finish(self) -> bytes:
        self._pending += bytes(2 * tarfile.BLOCKSIZE)  # end-of-archive marker
        self._pending += bytes(-(self._raw + len(self._pending)) % tarfile.RECORDSIZE)
        self._flush()
        self._out.write(self._deflate.flush())
        self._out.write(struct.pack("<II", self._crc & 0xFFFFFFFF, self._raw & 0xFFFFFFFF))
        return self._out.getvalue()


def _tarinfo(
    name: str, *, size: int = 0, executable: bool = False, directory: bool = False
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.size = size
    info.mode = 0o755 if (directory or executable) else 0o644
    info.mtime = BUNDLE_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def sort_key(path: str) -> list[str]:
    # Component-wise, so a directory's contents stay together ("a/x" before "a-b").
    return path.split("/")


def write_archive(planned: list[PlannedFile], max_size: int | None) -> tuple[bytes, tuple[BundleFile, ...]]:
    # Keep compressing past the limit for a while, so the error can usually state the real
    # size, but stop long before an accidentally bundled dataset is read in full.
    stop_after = None if max_size is None else 4 * max_size + 2**20
    tar = TarGzWriter(stop_after)
    files: list[BundleFile] = []
    written_dirs: set[str] = set()
    for item in planned:
        parts = item.path.split("/")
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth])
            if directory not in written_dirs:
                written_dirs.add(directory)
                tar.add(_tarinfo(directory, directory=True))
        try:
            size = _add_file(tar, item)
        except OSError as exc:
            raise BundleError(f"cannot read {item.source}: {exc.strerror or exc}") from None
        files.append(BundleFile(item.path, size, item.origin))
    return tar.finish(), tuple(files)


def _add_file(tar: TarGzWriter, item: PlannedFile) -> int:
    """Add one file, reading it once; returns its size."""
    if item.content is not None:
        tar.add(_tarinfo(item.path, size=len(item.content), executable=item.executable), item.content)
        return len(item.content)
    with open(item.source, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size <= TarGzWriter._CHUNK:
            # Small file: the header gets the length actually read, so a file that changes
            # meanwhile still yields a valid archive.
            content = fh.read()
            tar.add(_tarinfo(item.path, size=len(content), executable=item.executable), content)
            return len(content)
        # Large file: stream it, so the size limit can stop us before it is all in memory.
        tar.add_header(_tarinfo(item.path, size=size, executable=item.executable))
        remaining = size
        while remaining:
            piece = fh.read(min(remaining, TarGzWriter._CHUNK))
            if not piece:
                break
            tar.add_data(piece)
            remaining -= len(piece)
        if remaining or fh.read(1):
            raise BundleError(f"{item.source} changed while it was being bundled; try again")
        tar.end_member(size)
        return size
