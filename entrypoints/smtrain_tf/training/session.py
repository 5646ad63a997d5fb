"""One training run put together: strategy, data (channels or a data hook), model, optimizer, measures,
checkpoints, loop, TensorBoard scalars and artifacts.

The loop is Keras's own fit (keras_loop.py: the model compiled with the bundle's loss and metrics, its own
train_step if a model hook gives one), except under parameter server and Horovod/smddp (and Keras 2 with
gradient accumulation), where Keras has no loop for the strategy: smtrain's loop (loop.py), frozen there.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf

from .. import scaling
from ..check import settings as check_settings
from ..contract import mlflow_run
from ..contract.container import TRAIN_CHANNEL, VALIDATION_CHANNEL, Contract
from ..contract.errors import ConfigurationError, DataError
from ..contract.hyperparameters import is_hook
from ..data import hook_data, pipeline
from ..data.formats import ChannelData, load_channel, synthetic
from ..distribute import distribution
from ..distribute.choice import PS, Choice
from ..distribute.collective_libs import CollectiveLibrary
from ..export import artifacts
from ..keras_support import optimization
from ..keras_support.keras_compat import build_optimizer, keras, keras_version
from ..keras_support.measures import Measures
from ..models import builders
from ..models.names import BUILT_INS
from . import fit_keras, keras_loop, metrics, user_data
from .checkpoints import Checkpointer, Progress, resume
from .loop import LoopConfig, train
from .runners import CoordinatorRunner, InProcessRunner
from .steps import StepFunctions
from .summaries import Summaries


def _parse_shape(text: str) -> Tuple[int, ...]:
    try:
        shape = tuple(int(d) for d in text.replace("x", ",").split(",") if d.strip())
    except ValueError:
        raise ConfigurationError(f"synthetic_shape={text!r}: expected sizes such as 28,28,1") from None
    if not shape or min(shape) < 1:
        raise ConfigurationError(f"synthetic_shape={text!r}: expected positive sizes such as 28,28,1")
    return shape


class TrainingSession:
    def __init__(self, contract: Contract, choice: Choice, library: Optional[CollectiveLibrary], *,
                 started_at: float, say: Callable[[str], None]) -> None:
        self.contract = contract
        self.started_at = started_at
        self.say = say
        hp = contract.hp
        self.mixed = optimization.mixed_precision_wanted(hp("mixed_precision"))
        optimization.set_policy(self.mixed)
        keras.utils.set_random_seed(hp("seed"))
        self.dist = distribution.build(choice, library)
        self.hook: Optional[hook_data.HookDatasets] = None
        self.train_data: Optional[ChannelData] = None
        self.validation_data: Optional[ChannelData] = None
        if is_hook(hp("data")):
            self.hook = hook_data.load(hp("data"), contract.channels, self._hook_hyperparameters(),
                                       need_labels=hp("model") in BUILT_INS and not hp("num_classes"),
                                       may_skip_count=hp("max_steps_per_epoch") > 0, say=say)
            self.input_shape = self.hook.features_shape
            self.num_examples = self.hook.num_examples
        else:
            self.train_data, self.validation_data = self._load_data()
            self.input_shape = self.train_data.element_shape
            self.num_examples = self.train_data.num_examples
        self.num_classes = self._num_classes()
        # A check's one-device run stands for the planned replicas: it takes all their examples, at their rate.
        stands_for = check_settings.stands_for()
        self.per_replica_batch = hp("batch_size_per_replica") * stands_for
        self.accumulation = hp("gradient_accumulation_steps")
        self.global_batch = scaling.global_batch_size(self.per_replica_batch, self.dist.num_replicas)
        # One optimizer step sees every replica's micro-batches: the batch that sets the epoch and the rate.
        self.effective_batch = self.global_batch * self.accumulation
        self.steps_per_epoch = pipeline.steps_per_epoch(self.num_examples, self.effective_batch,
                                                        hp("max_steps_per_epoch"))
        self.learning_rate = scaling.scaled_learning_rate(hp("learning_rate"), hp("lr_scaling"),
                                                          self.dist.num_replicas * stands_for * self.accumulation)
        # Keras's own fit trains, except where Keras has no loop for the strategy (keras_loop.applies).
        self.keras_fit = keras_loop.applies(self.dist, self.accumulation)
        self.compiled_by_user = True  # a hook's model as it came: saved with its compile settings

    # --- data ----------------------------------------------------------------------------------

    def _load_data(self) -> Tuple[ChannelData, Optional[ChannelData]]:
        hp = self.contract.hp
        channels = self.contract.channels
        if hp("data") == "synthetic":
            default = builders.SYNTHETIC_SHAPES.get(hp("model"), (28, 28, 1))
            shape = _parse_shape(hp("synthetic_shape")) if hp("synthetic_shape") else default
            data = synthetic(shape, hp("synthetic_examples"), hp("num_classes") or 10, hp("seed"))
            return data, None
        train = load_channel(TRAIN_CHANNEL, channels[TRAIN_CHANNEL], hp("data_format"))
        validation = None
        if VALIDATION_CHANNEL in channels:
            validation = load_channel(VALIDATION_CHANNEL, channels[VALIDATION_CHANNEL], hp("data_format"))
            if validation.element_shape != train.element_shape:
                raise DataError(f"validation examples have shape {list(validation.element_shape)} but training "
                                f"examples {list(train.element_shape)} ({validation.files[0] if validation.files else ''})")
        return train, validation

    def _hook_hyperparameters(self) -> dict:
        return {**self.contract.hyperparameters.extras, **self.contract.hyperparameters.values}

    def _num_classes(self) -> int:
        """Classes for built-in models and model hooks; from a data hook, 0 when its labels are not counted."""
        wanted = self.contract.hp("num_classes")
        if self.hook is not None:
            if self.hook.max_label >= 0 and wanted and self.hook.max_label >= wanted:
                raise DataError(f"class id {self.hook.max_label} found but num_classes={wanted}")
            if wanted or self.hook.max_label < 0:
                return wanted
            if self.hook.max_label < 1:
                raise DataError(f"the labels of data hook {self.hook.name} hold a single class; classification "
                                "needs at least two")
            return self.hook.max_label + 1
        assert self.train_data is not None
        top = max(self.train_data.max_label, self.validation_data.max_label if self.validation_data else -1)
        if wanted and top >= wanted:
            raise DataError(f"class id {top} found but num_classes={wanted}")
        classes = wanted or top + 1
        if classes < 2:
            raise DataError(f"the training labels hold a single class ({self.train_data.files[:1]}); "
                            "classification needs at least two")
        return classes

    def _sharding(self) -> pipeline.Sharding:
        if self.dist.library is not None:
            return pipeline.Sharding(self.dist.num_workers, self.dist.worker_index, explicit=True)
        return pipeline.Sharding()

    def _training_input(self, steps: StepFunctions) -> Any:
        hp = self.contract.hp
        if self.hook is not None:
            return self._hook_training_input(steps)
        common = dict(shuffle_buffer=hp("shuffle_buffer"), cache=hp("cache"), cache_max_mb=hp("cache_max_mb"))
        if self.dist.kind == PS:
            data, global_batch = self.train_data, self.effective_batch

            def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
                # No seed: each worker should see its own order.
                return pipeline.training(data, context.get_per_replica_batch_size(global_batch),
                                         seed=None, **common)

            return CoordinatorRunner(self.dist, steps, dataset_fn)
        dataset = pipeline.training(self.train_data, self.dist.per_process_batch(self.effective_batch),
                                    seed=hp("seed"), sharding=self._sharding(),
                                    num_workers=self.dist.num_workers, **common)
        return InProcessRunner(self.dist, steps, dataset)

    def _hook_training_input(self, steps: StepFunctions) -> Any:
        assert self.hook is not None
        hp = self.contract.hp
        source = user_data.as_dataset(self.hook.train, "train", self.per_replica_batch)
        user_data.warn_if_not_split_by_file(source, self.dist, "training", self.say)
        stream = user_data.training(source, self.dist, batch_size_per_replica=self.per_replica_batch,
                                    accumulation=self.accumulation, steps_per_epoch=self.steps_per_epoch,
                                    shuffle_buffer=hp("shuffle_buffer"), seed=hp("seed"))
        if self.dist.kind == PS:
            assert stream.dataset_fn is not None
            return CoordinatorRunner(self.dist, steps, stream.dataset_fn)
        return InProcessRunner(self.dist, steps, stream.dataset)

    def _validation_input(self) -> Optional[tf.data.Dataset]:
        if self.hook is not None:
            if self.hook.validation is None:
                return None
            source = user_data.as_dataset(self.hook.validation, "validation", self.per_replica_batch)
            return user_data.validation(source, self.dist, self.per_replica_batch)
        if self.validation_data is None:
            return None
        hp = self.contract.hp
        if self.dist.kind == PS:
            return pipeline.evaluation(self.validation_data, self.global_batch, cache=hp("cache"),
                                       cache_max_mb=hp("cache_max_mb"))
        return pipeline.evaluation(self.validation_data, self.dist.per_process_batch(self.global_batch),
                                   cache=hp("cache"), cache_max_mb=hp("cache_max_mb"),
                                   sharding=self._sharding(), num_workers=self.dist.num_workers)

    # --- model ---------------------------------------------------------------------------------

    def _build_model(self) -> Tuple[builders.ModelBundle, Any]:
        hp = self.contract.hp
        warmup_steps = scaling.warmup_steps(hp("warmup_epochs"), self.steps_per_epoch)
        with self.dist.scope():
            bundle = builders.build(hp("model"), self.input_shape, self.num_classes, hp("hidden_units"),
                                    self._hook_hyperparameters(),
                                    element_spec=self.hook.train.element_spec if self.hook is not None else None)
            optimizer = bundle.optimizer
            if optimizer is None:
                schedule = optimization.WarmupSchedule(self.learning_rate, warmup_steps)
                optimizer = optimization.make_optimizer(hp("optimizer"), schedule, hp("momentum"))
            optimizer = optimization.with_loss_scaling(optimizer, self.mixed)
            if self.keras_fit:
                try:
                    keras_loop.accumulate(optimizer, self.accumulation)
                except ValueError as exc:
                    raise ConfigurationError(f"model {hp('model')}: {exc}") from None
            build_optimizer(optimizer, bundle.model.trainable_variables)
        return bundle, optimizer

    # --- run -----------------------------------------------------------------------------------

    def _config_line(self, bundle: builders.ModelBundle, optimizer: Any, steps_per_call: int,
                     metric_names: List[str]) -> str:
        hp = self.contract.hp
        # A hook's own optimizer keeps its rate: neither the spec's rate nor its scaling applies.
        rate = (f"learning_rate={self.learning_rate:.6g} lr_scaling={hp('lr_scaling')}" if bundle.optimizer is None
                else f"learning_rate={optimization.current_learning_rate(optimizer)} lr_scaling=none "
                     "optimizer=the_model's")
        shape = "x".join(str(d) for d in self.input_shape) if self.input_shape is not None else "structured"
        return (f"config {distribution.describe(self.dist)} batch_size_per_replica={self.per_replica_batch} "
                f"global_batch_size={self.global_batch} gradient_accumulation_steps={self.accumulation} "
                f"effective_batch_size={self.effective_batch} {rate} warmup_epochs={hp('warmup_epochs'):g} "
                f"steps_per_epoch={self.steps_per_epoch} steps_per_execution={steps_per_call} "
                f"mixed_precision={'on' if self.mixed else 'off'} xla={'on' if hp('xla') else 'off'} "
                f"model={hp('model')} data={hp('data')} classes={self.num_classes} "
                f"examples={self.num_examples if self.num_examples is not None else 'uncounted'} input_shape={shape} "
                f"metrics={','.join(metric_names) or 'none'} chief={self.dist.is_chief} "
                f"instance={self.contract.instance_type or 'unknown'} loop={'keras_fit' if self.keras_fit else 'smtrain'}")

    def run(self, heartbeat: Callable[[], None]) -> None:
        hp = self.contract.hp
        bundle, optimizer = self._build_model()
        try:
            measures = Measures(bundle.model, bundle.loss, bundle.metrics, bundle.loss_weights, bundle.from_logits)
        except ValueError as exc:
            raise ConfigurationError(f"model {hp('model')}: {exc}") from None
        if self.keras_fit:
            end, last = self._train_with_keras(bundle, optimizer, measures, heartbeat)
        else:
            end, last = self._train_with_smtrain_loop(bundle, optimizer, measures, heartbeat)
        self._finish(bundle, end, last)

    def _begin_mlflow(self) -> None:
        if self.dist.is_chief:
            mlflow_run.begin({"replicas": self.dist.num_replicas, "workers": self.dist.num_workers,
                              "strategy": self.dist.kind, "global_batch": self.effective_batch,
                              "learning_rate": self.learning_rate, "model": self.contract.hp("model")}, self.say)

    def _train_with_keras(self, bundle: builders.ModelBundle, optimizer: Any, measures: Measures,
                          heartbeat: Callable[[], None]) -> Tuple[Progress, Dict[str, str]]:
        """Keras's own fit: the model compiled with the bundle's loss (logits as the model gives them) and metrics."""
        hp = self.contract.hp
        model = bundle.model
        self.compiled_by_user = bool(getattr(model, "compiled", False) or getattr(model, "_is_compiled", False))
        loss = keras_loop.compile_loss(bundle.loss, bundle.from_logits)
        metrics_given = bundle.metrics or keras_loop.default_metrics(model, loss)
        with self.dist.scope():  # the compiled loss tracker's variables too: each process's own outside it
            model.compile(optimizer=optimizer, loss=loss, metrics=metrics_given, loss_weights=bundle.loss_weights,
                          jit_compile=bool(hp("xla")))
        schedule = keras_loop.Schedule(
            epochs=hp("epochs"), steps_per_epoch=self.steps_per_epoch, accumulation=self.accumulation,
            global_batch=self.effective_batch, steps_per_execution=hp("steps_per_execution"),
            checkpoint_dir=self.contract.checkpoint_dir, log_every_steps=hp("log_every_steps"))
        dataset = self._keras_training_input()
        prepared = keras_loop.prepare(self.dist, self.contract, model, schedule, [], dataset, self.say)
        validation = self._validation_input()
        names = measures.names if bundle.metrics else keras_loop.metric_names(metrics_given)
        self.say(self._config_line(bundle, optimizer, prepared.steps_per_call, names))
        self._begin_mlflow()
        trained = keras_loop.train(self.dist, self.contract, model, schedule, prepared, dataset, validation, [],
                                   location="smtrain_entry.py", place=fit_keras.script_place,
                                   started_at=self.started_at, say=self.say, heartbeat=heartbeat)
        return trained.end, trained.last_metrics

    def _keras_training_input(self) -> tf.data.Dataset:
        """The global micro-batches, endless: Keras takes `accumulation` of them per optimizer step."""
        hp = self.contract.hp
        if self.hook is not None:
            source = user_data.as_dataset(self.hook.train, "train", self.per_replica_batch)
            user_data.warn_if_not_split_by_file(source, self.dist, "training", self.say)
            return user_data.training(source, self.dist, batch_size_per_replica=self.per_replica_batch,
                                      accumulation=1, steps_per_epoch=self.steps_per_epoch * self.accumulation,
                                      shuffle_buffer=hp("shuffle_buffer"), seed=hp("seed")).dataset
        return pipeline.training(self.train_data, self.dist.per_process_batch(self.global_batch), seed=hp("seed"),
                                 sharding=self._sharding(), num_workers=self.dist.num_workers,
                                 shuffle_buffer=hp("shuffle_buffer"), cache=hp("cache"),
                                 cache_max_mb=hp("cache_max_mb"))

    def _train_with_smtrain_loop(self, bundle: builders.ModelBundle, optimizer: Any, measures: Measures,
                                 heartbeat: Callable[[], None]) -> Tuple[Progress, Dict[str, str]]:
        """Parameter server, Horovod/smddp (and Keras 2 with gradient accumulation): smtrain's loop, frozen."""
        hp = self.contract.hp
        steps = StepFunctions(self.dist, bundle.model, optimizer, measures, self.per_replica_batch, hp("xla"),
                              self.accumulation)
        checkpointer = Checkpointer(self.contract.checkpoint_dir, hp("keep_checkpoints"), kind=self.dist.kind,
                                    is_chief=self.dist.is_chief, worker_index=self.dist.worker_index,
                                    model=bundle.model, optimizer=optimizer)
        start = resume(checkpointer, self.dist, bundle.model, optimizer, self.steps_per_epoch, self.say)
        runner = self._training_input(steps)
        validation = self._validation_input()
        self.say(self._config_line(bundle, optimizer, hp("steps_per_execution"), measures.names))
        self._begin_mlflow()
        config = LoopConfig(epochs=hp("epochs"), steps_per_epoch=self.steps_per_epoch,
                            steps_per_execution=hp("steps_per_execution"),
                            checkpoint_every_steps=hp("checkpoint_every_steps"),
                            log_every_steps=hp("log_every_steps"), global_batch=self.effective_batch,
                            fail_on_nan=hp("fail_on_nan"))
        emit = self.say if self.dist.is_chief else (lambda line: None)
        summaries = (Summaries(self.contract.tensorboard_dir)
                     if self.dist.is_chief and self.contract.tensorboard_dir else None)
        try:
            result = train(config, dist=self.dist, runner=runner, steps=steps, checkpointer=checkpointer,
                           validation=validation, start=start, started_at=self.started_at, heartbeat=heartbeat,
                           emit=emit, summaries=summaries)
        finally:
            if summaries is not None:
                summaries.close()
        return result.progress, result.last_metrics

    def _finish(self, bundle: builders.ModelBundle, end: Progress, last_metrics: Dict[str, str]) -> None:
        """The weights digest from every process; the artifacts and the training summary from the chief."""
        weights, digest = metrics.say_weights(bundle.model, self.say)
        if self.dist.is_chief:
            began = time.time()
            if bundle.built_in:
                assert self.input_shape is not None
                written = artifacts.save_artifacts(bundle.model, weights, self.contract.model_dir, self.input_shape,
                                                   bundle.from_logits)
            else:  # a hook's model keeps its own inputs and outputs in the serving signature
                written = artifacts.save_model(bundle.model, weights, self.contract.model_dir,
                                               with_compile=self.compiled_by_user)
            self.say(f"saved {' and '.join(written)} in {time.time() - began:.1f}s")
            artifacts.write_summary(self.contract.output_data_dir, {
                "strategy": self.dist.kind, "replicas": self.dist.num_replicas, "workers": self.dist.num_workers,
                "global_batch_size": self.global_batch, "learning_rate": self.learning_rate,
                "gradient_accumulation_steps": self.accumulation, "effective_batch_size": self.effective_batch,
                "epochs": end.epoch, "steps": end.global_step, "last_epoch_metrics": last_metrics,
                "weights_sha256": digest, "tensorflow": tf.__version__, "keras": keras_version(),
                "mixed_precision": self.mixed, "artifacts": [os.path.basename(p) for p in written]})
        self.say(f"training finished epochs={end.epoch} steps={end.global_step} "
                 f"elapsed={time.time() - self.started_at:.1f}")
