"""check/loss_terms.py: the loss a traced step differentiates, taken apart into its terms, each named by the line of
the script that made it (here, this file stands for the script)."""

from __future__ import annotations

import inspect
import os
from typing import Any


def _place(filename: str, line: int) -> str | None:
    """This file's lines but _traced's own (it stands for Keras's fit, which calls the step)."""
    first, count = _TRACED_LINES
    if filename != __file__ or first <= line < first + count:
        return None
    return f"{os.path.basename(filename)}:{line}"


def _traced(step: Any, place: Any = None) -> tuple[list[str], list[float]]:
    """The terms `step` differentiates, traced in a tf.function as Keras traces a train_step: places and values."""
    import tensorflow as tf
    from smtrain_tf.check import loss_terms

    places: list[str] = []

    @tf.function
    def run() -> Any:
        with loss_terms.capturing() as targets:
            step()
        found = loss_terms.terms(targets, place or _place)
        places[:] = [where for _, where in found]
        return [value for value, _ in found]

    return places, [float(v) for v in run()]


_TRACED_LINES = (inspect.getsourcelines(_traced)[1], len(inspect.getsourcelines(_traced)[0]))


def _line(marker: str) -> int:
    with open(__file__, encoding="utf-8") as source:
        return next(n for n, text in enumerate(source, start=1) if text.rstrip().endswith(marker))


def penalty(w: Any) -> Any:
    import tensorflow as tf

    return 0.5 * tf.reduce_mean(tf.square(w))  # penalty's term


def test_a_sum_is_taken_apart_in_the_order_written_and_each_term_named_at_its_line() -> None:
    import tensorflow as tf

    w = tf.Variable([1.0, 2.0])

    def step() -> None:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w) - penalty(w)  # the sum's line
            loss = tf.identity(loss) + tf.add_n([w[0] * 2.0, w[1]])  # more terms
        tape.gradient(loss, [w])

    places, values = _traced(step)
    at, more = _line("# the sum's line"), _line("# more terms")
    assert places == [f"test_check_loss_terms.py:{at} (step)",
                      f"test_check_loss_terms.py:{_line(chr(35) + ' penalty' + chr(39) + 's term')} (penalty), "
                      f"called at test_check_loss_terms.py:{at} (step)",
                      f"test_check_loss_terms.py:{more} (step)", f"test_check_loss_terms.py:{more} (step)"]
    assert values == [3.0, 1.25, 2.0, 2.0]


def test_keras_s_sum_of_a_list_of_losses_is_taken_apart_and_its_own_frames_are_keras_s() -> None:
    import tensorflow as tf
    from keras import ops

    w = tf.Variable([1.0, 3.0])

    def step() -> None:
        with tf.GradientTape() as tape:
            total = ops.sum([ops.mean(w), w[1] * 0.5])  # a list of losses
        tape.gradient(total, [w])

    places, values = _traced(step)
    assert values == [2.0, 1.5]
    assert places == [f"test_check_loss_terms.py:{_line('# a list of losses')} (step)"] * 2
    # No frame of the script's (Keras's own default train_step): said so.
    assert _traced(lambda: _keras_only(w), place=lambda filename, line: None)[0] == ["Keras's train_step"]


def _keras_only(w: Any) -> None:
    import tensorflow as tf

    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(w)
    tape.gradient(loss, [w])


def test_only_a_target_of_the_graph_being_traced_counts_and_the_tape_is_left_as_it_was() -> None:
    import tensorflow as tf
    from smtrain_tf.check import loss_terms

    w = tf.Variable(2.0)
    with loss_terms.capturing() as targets:  # eager: nothing to take apart
        with tf.GradientTape() as tape:
            loss = w * w + w
        assert float(tape.gradient(loss, w)) == 5.0  # the tape's own gradient, called through
    assert len(targets) == 1 and loss_terms.terms(targets, _place) == []
    with tf.GradientTape() as tape:  # outside a capture nothing is kept
        loss = w * 3.0
    assert float(tape.gradient(loss, w)) == 3.0 and len(targets) == 1


def test_an_inner_tape_on_inputs_is_no_loss_and_a_scalar_added_per_example_counts_per_example() -> None:
    import tensorflow as tf

    w = tf.Variable([1.0, 2.0])

    def step() -> None:
        with tf.GradientTape() as tape:
            inputs = tf.constant([3.0, 4.0])
            with tf.GradientTape() as inner:  # WGAN-GP's penalty: a gradient with respect to the inputs
                inner.watch(inputs)
                critic = tf.reduce_sum(inputs * w)
            penalty = tf.reduce_sum(inner.gradient(critic, [inputs])[0])
            per_example = w * 2.0 + penalty  # a vector loss: the scalar counts once per example
        tape.gradient(per_example, [w])

    places, values = _traced(step)
    assert len(places) == 2, places  # the outer tape's two terms; the inner tape's target is not a loss
    assert values == [6.0, 6.0]  # w * 2 summed (2 + 4); the penalty (1 + 2 = 3) once per example of 2


def test_a_sum_of_more_terms_than_the_limit_is_taken_apart_no_further() -> None:
    import tensorflow as tf
    from smtrain_tf.check.loss_terms import MAX_TERMS

    w = tf.Variable(1.0)
    for count, split in ((MAX_TERMS, True), (MAX_TERMS + 1, False)):
        def step(count: int = count) -> None:
            with tf.GradientTape() as tape:
                loss = tf.add_n([w * float(i) for i in range(count)])
            tape.gradient(loss, [w])

        places, values = _traced(step)
        assert len(values) == (count if split else 1), (count, values)
        assert sum(values) == float(sum(range(count)))
