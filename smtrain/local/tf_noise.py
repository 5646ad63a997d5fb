"""TensorFlow's C++ start-up lines (and a few others), recognised so that a local run's terminal can leave them out.

Every TensorFlow process prints a few lines from its C++ runtime before the program says anything:
notices about the build (oneDNN, CPU instructions), about GPU libraries a CPU run does not use, and
warnings that name no action a user could take. A local run starts several processes, so they fill
the terminal. `is_noise(line)` says whether a line is one of them; the supervisor still writes every
line to the host's log file and shows these on the terminal only with --verbose or when the host
fails (smtrain.local.supervise).

Only the messages below are recognised, by their text, never by level or file alone: an unknown
C++ warning or error, a Python warning, a traceback or a metric line is always shown. Each
message must fill the whole line (after its log header), so a line that mpirun merged with
another rank's output is shown rather than hidden with it. A few messages run over several lines
(a dataset's definition, gRPC's details): `NoiseFilter` follows a host's lines and takes those that
belong to such a message, by their form, to the message's end.

TensorFlow prints a C++ log line in one of two layouts:

    W0000 00:00:1795420601.179277   28208 dataset.cc:997] <message>                  (absl, TF >= 2.16)
    2026-11-23 08:00:04.818220: I tensorflow/core/platform/cpu_feature_guard.cc:182] <message>   (TF < 2.16)

Under mpirun --tag-output (the Horovod and smddp launchers) each piece of a line carries a tag such
as ``[1,0]<stderr>:``; a rank's line can arrive in several tagged pieces, so every tag is removed
before the line is read.
"""

from __future__ import annotations

import re

# mpirun --tag-output: [jobid,rank]<stream>: before each piece of a rank's output.
_MPI_TAG = re.compile(r"\[\d+,\d+\]<std(?:out|err|diag)>:")
# The header of a C++ log line, absl's layout or TensorFlow's older one. Info, warning or error: a
# fatal line (F) is never noise, whatever it says.
_HEADER = re.compile(r"(?:[IWE]\d{4} \d{2}:\d{2}:[\d.]+\s+\d+ "
                     r"|\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d+: [IWE] )[\w./+-]+:\d+\] ")

# Messages after a log header. Why each is noise for a local run:
LOGGED = tuple(re.compile(pattern) for pattern in (
    # The build uses oneDNN kernels: results may differ in the last bits from another build. Printed by every
    # process of the x86 `tensorflow` wheels; nothing to do about it.
    r"oneDNN custom operations are on\..*",
    # The `tensorflow` wheel looked for CUDA and found none. Local runs are CPU runs (SM_NUM_GPUS=0), and the
    # bundled entrypoint says in its own line which GPUs TensorFlow sees.
    r"Could not find cuda drivers on your machine, GPU will not be used\.?",
    r"failed call to cuInit: .*",
    # The binary was built without some instructions this CPU has (AVX2, FMA...): a note to people who
    # build TensorFlow themselves. Its second line comes without a header (CONTINUATIONS).
    r"This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations\.",
    # GPU wheels register their CUDA plugins twice (TensorFlow and XLA both link them): logged as errors at
    # every start, harmless (tensorflow/tensorflow#62075).
    r"Unable to register cu(?:DNN|FFT|BLAS) factory: Attempting to register factory for plugin cu(?:DNN|FFT|BLAS)"
    r" when one has already been registered",
    r"computation placer already registered\. Please check linkage and avoid linking the same target more than"
    r" once\.",
    # TensorRT is an optional extra of GPU wheels; training never uses it.
    r"TF-TRT Warning: Could not find TensorRT",
    # A GPU machine's kernel reports no NUMA node; TensorFlow assumes node zero, as it should.
    r"successful NUMA node read from SysFS had negative value \(-1\).*",
    # tf.data cannot rewrite a Dataset.from_generator input when a strategy distributes the dataset (seen
    # in every multi-worker run of the bundled entrypoint): the pipeline runs as written, nothing is wrong.
    r"Input of GeneratorDatasetOp::Dataset will not be optimized because the dataset does not implement the"
    r" AsGraphDefInternal\(\) method needed to apply optimizations\.",
    # tf.data ends an iteration by aborting the executor's rendezvous with OUT_OF_RANGE: the end of the data
    # (each epoch's end, in some versions), not an error.
    r"Local rendezvous is aborting with status: OUT_OF_RANGE: End of sequence",
    # A multi-worker tf.data input that is not a list of files is sharded by DATA (every worker reads all of
    # it and keeps its share): TF 2.13 says so for every dataset it distributes, followed by the source
    # dataset's NodeDef, 70 lines of it (MULTI_LINE). The run works as written.
    r"AUTO sharding policy will apply DATA sharding policy as it failed to apply FILE sharding policy because of"
    r" the following reason: .*",
    r"The `assert_cardinality` transformation is currently not handled by the auto-shard rewrite and will be"
    r" removed\.",
    # After a multi-worker run, a worker whose chief has already exited loses the coordination service on its
    # way out; followed by gRPC's details (MULTI_LINE). When the host failed, show_hidden brings it back.
    r"BaseCollectiveExecutor::StartAbort UNAVAILABLE: Failed to send RPC to coordination service\..*",
))

# Whole lines without a header.
BARE = tuple(re.compile(pattern) for pattern in (
    # absl says once, at the first C++ log line, where the lines before its set-up go; it carries no news.
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR",
    # The second line of the CPU-instructions notice above.
    r"To enable the following instructions: .*, in other operations, rebuild TensorFlow with the appropriate"
    r" compiler flags\.",
))


def _one_line_is_noise(text: str) -> bool:
    text = text.strip()
    if any(p.fullmatch(text) for p in BARE):
        return True
    header = _HEADER.match(text)
    if header is None:
        return False
    message = text[header.end():].strip()
    return any(p.fullmatch(message) for p in LOGGED)


class _NodeDefDump:
    """The lines after auto_shard's notice: a NodeDef in protobuf text, then an empty line. Only its fields are
    taken at the outer level, so a program's own `loss: 0.3` after the dump is never swallowed."""

    FIELDS = ("op", "input", "device", "attr", "experimental_debug_info", "experimental_type")
    _LINE = re.compile(r"\s*(?:([A-Za-z_][\w.]*)(: .*| \{)|(\}))")

    def __init__(self) -> None:
        self.depth = 0
        self.ended = False

    def takes(self, text: str) -> bool:
        if self.ended:
            return False
        if not text.strip():
            self.ended = self.depth == 0  # the blank line that ends the dump
            return self.ended
        line = self._LINE.fullmatch(text)
        if line is None or (self.depth == 0 and line.group(1) not in self.FIELDS):
            return False
        if line.group(3):
            self.depth -= 1
        elif line.group(2) == " {":
            self.depth += 1
        return self.depth >= 0


class _GrpcDetails:
    """The lines a gRPC status carries after its message: where it came from, its JSON, its payloads."""

    _LINE = re.compile(r"Additional GRPC error information from remote target .*|:\{.*\}|\[type\.googleapis\.com/.*\]"
                       r"|")

    def takes(self, text: str) -> bool:
        return self._LINE.fullmatch(text.strip()) is not None


# A noise message whose next lines belong to it: what reads them.
MULTI_LINE = ((re.compile(r"AUTO sharding policy will apply DATA .*Found an unshardable source dataset: .*"), _NodeDefDump),
              (re.compile(r"(?:\w+::)*StartAbort UNAVAILABLE: .*"), _GrpcDetails))


class NoiseFilter:
    """`is_noise` for a stream of lines: a noise message that spans lines (MULTI_LINE) is noise to its end.

    One per run; its memory is kept per host and, under mpirun, per rank (each rank's lines carry its tag).
    """

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], _NodeDefDump | _GrpcDetails] = {}

    def __call__(self, host: str, line: str) -> bool:
        tag = _MPI_TAG.match(line)
        key = (host, tag.group() if tag else "")
        text = _MPI_TAG.sub("", line)
        rest = self._open.get(key)
        if rest is not None:
            if rest.takes(text):
                return True
            del self._open[key]
        if not is_noise(line):
            return False
        header = _HEADER.match(text.strip())
        message = text.strip()[header.end():] if header else ""
        for pattern, reader in MULTI_LINE:
            if pattern.fullmatch(message):
                self._open[key] = reader()
        return True


# A C++ log header anywhere in a line: TensorFlow's C++ runtime writes to stderr while a Keras progress
# bar (redrawn with carriage returns, no newline) is open on the same pipe, so its line lands at the end of
# the bar's.
_HEADER_INSIDE = re.compile(r"[IWE]\d{4} \d{2}:\d{2}:[\d.]+\s+\d+ [\w./+-]+:\d+\] "
                            r"|\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d+: [IWE] [\w./+-]+:\d+\] ")


def noise_at_the_end(line: str) -> int | None:
    """Where a noise message glued to the end of another line begins (a progress bar's, say), or None.

    Only a message that is noise by itself to the line's end counts, so `loss: 0.3379W0000 ... dataset.cc:997]
    Input of GeneratorDatasetOp...` keeps `loss: 0.3379` and drops the rest; an unknown message stays.
    """
    for found in _HEADER_INSIDE.finditer(line):
        if found.start() > 0 and _one_line_is_noise(line[found.start():]):
            return found.start()
    return None


def is_noise(line: str) -> bool:
    """Whether `line` (one line of a host's output, mpirun's tags included) is TensorFlow start-up noise."""
    if _one_line_is_noise(_MPI_TAG.sub("", line)):
        return True
    # mpirun may put two ranks' lines on one: noise only if every tagged piece is.
    pieces = [p for p in _MPI_TAG.split(line) if p.strip()]
    return len(pieces) > 1 and all(_one_line_is_noise(p) for p in pieces)
