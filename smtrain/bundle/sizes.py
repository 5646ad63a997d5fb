"""Bundle sizes: large files named before they are compressed, hopeless totals refused before any work.

code.max_bundle_size limits the compressed archive, so a huge but compressible file (a sparse
disk image, a zero-filled dataset) passes it after minutes of compressing. Two guards come first:

* every source file over LARGE_FILE is named in a warning, with the .smtrainignore line that
  leaves it out;
* deflate never compresses better than DEFLATE_MAX_RATIO to 1, so files totalling more than that
  many times the limit cannot fit whatever they hold: refused at once with the usual size error;
* one file over 1 GB (HUGE_FILE, or code.max_bundle_size where larger) is data, whatever it holds: a
  20 GB sparse disk image compresses to almost nothing, after minutes. Refused before a byte of it is
  read, with the .smtrainignore line that leaves it out (refuse_huge_files).
"""

from __future__ import annotations

from collections.abc import Sequence

from smtrain.bundle.archive import sort_key
from smtrain.bundle.ignore import SMTRAINIGNORE, ignore_line
from smtrain.bundle.model import BundleError, PlannedFile

LARGE_FILE = 10 * 10**6  # 10 MB: code is rarely this big, data often is
# Deflate's best case: a 258-byte match coded in 2 bits (zlib's technical notes).
DEFLATE_MAX_RATIO = 1032
_LISTED = 5  # largest files named in the size error


def human(num_bytes: int) -> str:
    """`1.5 MB (1500000 bytes)`: decimal units, as the spec's sizes, with the exact count."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:.1f} {unit} ({num_bytes} bytes)"
    return f"{num_bytes} bytes"


def size_error(amount: str, max_size: int, planned: Sequence[PlannedFile], why: str = "") -> BundleError:
    """The bundle is over the limit: `amount` says by how much as far as known; the largest files named."""
    largest = sorted(planned, key=lambda p: (-p.size, p.path))[:_LISTED]
    listing = "\n".join(f"  {p.path}  {human(p.size)}" for p in largest)
    return BundleError(
        f"the code bundle is {amount} compressed, over the limit of {human(max_size)}{why}.\n"
        f"Largest files:\n{listing}\n"
        f"Leave data out of code.source_dir (list it in {SMTRAINIGNORE}) and read it from S3 instead."
    )


# SageMaker documents no limit of its own on the code archive: the SDK uploads it as one S3 object, and
# sagemaker_submit_directory may name any S3 object; one PutObject takes at most 5 GB (Amazon S3 User Guide,
# "Uploading objects"). No code file comes near 1 GB, and below it packing costs seconds at worst (zeros
# deflate fast, and incompressible data stops the packing once it is over the limit); so a file over 1 GB,
# or over code.max_bundle_size where that is larger, is refused from its size alone.
HUGE_FILE = 10**9


def refuse_huge_files(planned: Sequence[PlannedFile], max_size: int | None) -> None:
    """Refuse every file over HUGE_FILE (or code.max_bundle_size, where larger): nothing of it is read,
    nothing compressed."""
    bound = max(HUGE_FILE, max_size or 0)
    huge = sorted((p for p in planned if p.size > bound), key=lambda p: sort_key(p.path))
    if not huge:
        return
    one = len(huge) == 1
    listing = "\n".join(f"  {p.path}  {human(p.size)}" for p in huge)
    lines = "\n".join(f"  {ignore_line(p.path)}" for p in huge if p.origin == "source")
    leave_out = (f"\n{'This line' if one else 'These lines'} in {SMTRAINIGNORE} leave{'s' if one else ''} "
                 f"{'it' if one else 'them'} out:\n{lines}") if lines else ""
    raise BundleError(
        f"{'a file' if one else f'{len(huge)} files'} over {human(bound)}: data, not code; not read, not "
        f"bundled:\n{listing}\nRead data from S3 (an input channel) instead.{leave_out}"
    )


def refuse_hopeless(planned: Sequence[PlannedFile], max_size: int | None) -> None:
    """Raise the size error when the files cannot fit under `max_size` however well they compress."""
    if max_size is None:
        return
    total = sum(p.size for p in planned)
    floor = total // DEFLATE_MAX_RATIO
    if floor > max_size:
        raise size_error(f"at least {human(floor)}", max_size, planned,
                         f": its files hold {human(total)}, and compression does {DEFLATE_MAX_RATIO}:1 at best")


def large_files_warning(planned: Sequence[PlannedFile]) -> str | None:
    """A warning naming every source file over LARGE_FILE and the lines that would leave them out."""
    large = [p for p in planned if p.origin == "source" and p.size > LARGE_FILE]
    if not large:
        return None
    listing = "\n".join(f"  {p.path}  {human(p.size)}" for p in large)
    lines = "\n".join(f"  {ignore_line(p.path)}" for p in large)
    one = len(large) == 1
    return (f"{'a file' if one else f'{len(large)} files'} over {LARGE_FILE // 10**6} MB will be compressed into "
            f"the code bundle:\n{listing}\n"
            f"If {'it is' if one else 'they are'} data, read {'it' if one else 'them'} from S3 instead; "
            f"{'this line' if one else 'these lines'} in {SMTRAINIGNORE} leave{'s' if one else ''} "
            f"{'it' if one else 'them'} out:\n{lines}")
