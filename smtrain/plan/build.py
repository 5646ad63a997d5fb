"""Spec -> Plan: every decision made (program, instance, strategy, replicas, batch, learning rate, environment,
cost), nothing sent."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

# The bundled entrypoint's own maths (plain Python, no TensorFlow): the plan shows what training uses.
from smtrain_tf.scaling import global_batch_size, scaled_learning_rate

from smtrain.plan import (
    choices,
    declared_metrics,
    distribution,
    entrypoint_rules,
    git_source,
    instance_groups,
    keras_choice,
    launch,
    program,
)
from smtrain.plan.catalog import Catalog, CatalogError, InstanceType
from smtrain.plan.instance_choice import explicit_instance, instance_gpu_summary, select_instance, tensorflow_warning
from smtrain.plan.job_places import TENSORBOARD_LOCAL_PATH, job_name_template, tensorboard_files_uri, tensorboard_s3_path
from smtrain.plan.tf_image_choice import TfChoice, choose_image, for_distribution
from smtrain.redact import mask_text
from smtrain.spec.model import LoadedSpec, Spec
from smtrain.spec.problems import Problem, SpecError
from smtrain.spec.yaml_source import SourceMap


@dataclass(frozen=True)
class Cost:
    """USD for all nodes together: on-demand from the catalog, spot as an estimate."""

    per_hour: float | None  # None: the catalog marks the price unknown
    max_for_run: float | None
    spot_per_hour_estimate: float | None
    spot_max_estimate: float | None
    price_source: str
    price_date: str
    price_region: str = ""  # the region the price is for: the job's where the catalog knows it
    region_note: str | None = None  # "price for us-east-1; eu-west-1 unknown"
    price_note: str | None = None  # the catalog's note on this price ("unverified estimate: ...")
    price_is_estimate: bool = False
    # A heterogeneous cluster's types outside the GPU catalog, whose price is not counted above.
    unpriced: tuple[str, ...] = ()


@dataclass(frozen=True)
class Wrap:
    """What smtrain_wrap.py does to a script that runs unchanged (code.wrap)."""

    script: str
    batch: str  # per_replica: the script's batch_size is one replica's; global: kept as written
    batch_factor: int  # the script's batch_size is multiplied by this
    lr_scaling: str | None  # None: the compiled learning rate is left alone (the spec names no rule)
    lr_factor: float  # the compiled learning rate is multiplied by this
    tuning: bool = True  # Keras's fit runs several steps per call (code.wrap_tuning)

    def summary(self) -> dict[str, Any]:
        return {"script": self.script, "batch": self.batch, "batch_factor": self.batch_factor,
                "lr_scaling": self.lr_scaling, "lr_factor": self.lr_factor, "tuning": self.tuning}


@dataclass(frozen=True)
class Plan:
    spec: Spec
    base_dir: Path  # relative paths of the spec (code.source_dir) are resolved against it
    region: str
    instance: InstanceType
    instance_reason: str
    nodes: int
    strategy: str
    strategy_reason: str
    processes_per_host: int
    replicas: int
    # The batch and learning-rate maths: the bundled entrypoint's only (None for an own script, which
    # decides its own batch; a wrapped one's rules are in `wrap`).
    batch_per_replica: int | None
    global_batch: int | None  # one step over every replica
    gradient_accumulation_steps: int | None  # set in the spec: micro-batches per optimizer step
    effective_batch: int | None  # per optimizer step: global_batch x accumulated steps
    learning_rate: float | None
    scaled_learning_rate: float | None  # scaled on the effective batch
    framework_version: str | None
    py_version: str | None
    image_uri: str | None
    distribution: dict[str, Any] | None
    entry_point: str  # the program SageMaker starts (sagemaker_program)
    hyperparameters: dict[str, Any]
    launch: list[launch.HostLaunch]
    cost: Cost
    kind: str = program.BUNDLED  # the program: bundled | own | wrapped (smtrain.plan.program)
    script: str | None = None  # the user's own script (code.entry_point), wrapped or not
    wrap: Wrap | None = None
    strategy_told: str | None = None  # own scripts: what the container tells the script's strategy
    # The request's Environment: the spec's, then the SMTRAIN_* variables smtrain adds.
    environment: dict[str, str] = field(default_factory=dict)
    # Metrics the model reports beyond loss and accuracy: each gets MetricDefinitions (declared_metrics.py).
    metrics: tuple[str, ...] = ()
    # Whether the program's output has the metric lines those definitions read: False for a hand-written
    # script that neither trains through smtrain_tf nor prints `loss=...` itself (declared_metrics.py).
    metric_lines: bool = True
    # Where the job may run, in the order SageMaker tries them (compute.prefer), else the one instance
    # above; the first with capacity runs (smtrain.plan.choices).
    choices: tuple[choices.Choice, ...] = ()
    # A heterogeneous cluster's groups (compute.instance_groups), the instance above being one of them; the
    # cost is theirs together (smtrain.plan.instance_groups).
    instance_groups: tuple[instance_groups.Group, ...] = ()
    # The TensorFlow image: version, Python, URI and where it comes from (smtrain.plan.tf_image_choice).
    tf_image: TfChoice | None = None
    # The Keras the code runs on, and the requirement added for it (smtrain.plan.keras_choice).
    keras: keras_choice.KerasChoice | None = None
    # code.git: the repository and the exact commit the job runs (smtrain.plan.git_source); None for source_dir.
    git: git_source.GitCheckout | None = None
    warnings: list[Problem] = field(default_factory=list)
    # Where the spec's fields sit in its file: later checks (the rendered request's) report there too.
    source: SourceMap | None = field(default=None, compare=False, repr=False)

    @property
    def smtrain_environment(self) -> dict[str, str]:
        """The variables smtrain adds to the spec's environment (a spec never sets one of them itself)."""
        return {k: v for k, v in self.environment.items() if k not in self.spec.environment}

    def tensorboard(self) -> dict[str, str | None]:
        """Where the job's TensorBoard event files go: written to `container_path` by the chief, uploaded by
        SageMaker under `event_files` (the job name a template), or nowhere in S3 (both None)."""
        s3_path = tensorboard_s3_path(self.spec)
        return {"container_path": TENSORBOARD_LOCAL_PATH, "s3_output_path": s3_path,
                "event_files": tensorboard_files_uri(s3_path, job_name_template(self.spec.name)) if s3_path else None}

    def __repr__(self) -> str:  # short, and masked: a notebook shows it (the fields hold the spec's secrets)
        return mask_text(f"<Plan {self.spec.name}: {self.nodes} x {self.instance.name}, {self.strategy}, "
                         f"{self.replicas} replicas>")

    def summary(self) -> dict[str, Any]:
        """The plan as stable, documented keys (`smtrain plan --output json`)."""
        t = self.spec.training
        batch = None if self.batch_per_replica is None else {
            "per_replica": self.batch_per_replica, "global": self.global_batch,
            "gradient_accumulation_steps": self.gradient_accumulation_steps, "effective": self.effective_batch}
        rate = None if self.learning_rate is None else {
            "base": self.learning_rate, "scaling": t.lr_scaling, "scaled": self.scaled_learning_rate,
            "warmup_epochs": t.warmup_epochs}
        return {
            "name": self.spec.name,
            "region": self.region,
            "instance": {"type": self.instance.name, "reason": self.instance_reason, "gpu": self.instance.gpu,
                         "gpus": self.instance.gpus, "gpu_memory_mib": self.instance.gpu_memory_mib,
                         "gpu_memory_gb": round(self.instance.gpu_memory / 10**9, 2),
                         "efa": self.instance.efa, **instance_gpu_summary(
                             self.instance, self.spec.training.mixed_precision if self.kind == program.BUNDLED else None)},
            "nodes": self.nodes,
            "gpus_per_node": self.instance.gpus,
            "strategy": {"name": self.strategy, "reason": self.strategy_reason,
                         "processes_per_host": self.processes_per_host, "sdk_distribution": self.distribution},
            "replicas": self.replicas,
            "batch": batch,
            "learning_rate": rate,
            "tensorflow": {**(self.tf_image.summary() if self.tf_image else {
                "version": self.framework_version, "python": self.py_version, "image_uri": self.image_uri}),
                "keras": self.keras.summary() if self.keras else None},
            "entry_point": self.entry_point,
            "git": self.git.summary() if self.git else None,
            "program": {"kind": self.kind, "script": self.script, "strategy_told": self.strategy_told,
                        "environment": self.smtrain_environment},
            "wrap": self.wrap.summary() if self.wrap else None,
            "hyperparameters": self.hyperparameters,
            "launch": [{"host": h.host, "tf_config": h.tf_config, "command": h.command, "note": h.note,
                        "ps_tf_config": h.ps_tf_config} for h in self.launch],
            "cost_usd": {"per_hour": _round(self.cost.per_hour, 4), "max_for_run": _round(self.cost.max_for_run, 2),
                         "spot_per_hour_estimate": _round(self.cost.spot_per_hour_estimate, 4),
                         "spot_max_estimate": _round(self.cost.spot_max_estimate, 2),
                         "max_run_seconds": self.spec.compute.max_run,
                         "price_source": self.cost.price_source, "price_date": self.cost.price_date,
                         "price_region": self.cost.price_region, "region_note": self.cost.region_note,
                         "price_note": self.cost.price_note, "price_is_estimate": self.cost.price_is_estimate,
                         "unpriced_types": list(self.cost.unpriced)},
            "tensorboard": self.tensorboard(),
            "choices": [c.summary() for c in self.choices],
            "instance_groups": [g.summary() for g in self.instance_groups],
            # What the MetricDefinitions will read: none for a script whose output has no metric line.
            "metrics": ["loss", "accuracy", *self.metrics] if self.metric_lines else [],
            "warnings": [w.render() for w in self.warnings],
        }


@dataclass(frozen=True)
class _Maths:
    """The bundled entrypoint's batch and learning rate, all None for an own script."""

    batch_per_replica: int | None = None
    global_batch: int | None = None
    gradient_accumulation_steps: int | None = None
    effective_batch: int | None = None
    learning_rate: float | None = None
    scaled_learning_rate: float | None = None


def _maths(spec: Spec, replicas: int) -> _Maths:
    if program.kind(spec) != program.BUNDLED:
        return _Maths()
    t = spec.training
    steps = t.gradient_accumulation_steps
    # An accumulated step is one optimizer step over `steps` micro-batches: the rate follows its batch.
    units = replicas * (steps or 1)
    return _Maths(t.batch_size_per_replica, global_batch_size(t.batch_size_per_replica, replicas), steps,
                  global_batch_size(t.batch_size_per_replica, units), t.learning_rate,
                  scaled_learning_rate(t.learning_rate, t.lr_scaling, units))


def _wrap(spec: Spec, replicas: int) -> Wrap | None:
    if program.kind(spec) != program.WRAPPED:
        return None
    t, code = spec.training, spec.code
    # The wrap rescales the compiled rate for the replicas (smtrain_tf/wrap/learning_rate.py), only on request.
    rule = t.lr_scaling if "lr_scaling" in t.model_fields_set else None
    return Wrap(code.entry_point or "", code.wrap_batch, replicas if code.wrap_batch == "per_replica" else 1,
                rule, scaled_learning_rate(1.0, rule, replicas) if rule else 1.0, code.wrap_tuning)


def _cost(catalog: Catalog, spec: Spec, instance: InstanceType, nodes: int, region: str | None,
          groups: tuple[instance_groups.Group, ...] = ()) -> Cost:
    """The cost of `nodes` x `instance`, or of every group of a heterogeneous cluster together."""
    parts = [(g.instance, g.count) for g in groups] or [(instance, nodes)]
    prices = [(catalog.price(i, region), n) for i, n in parts]
    known = [(p, n) for p, n in prices if p.per_hour is not None]
    # A group's CPU type outside the GPU catalog has no price: the others are counted, and the note says so.
    left_out = [i.name for i, _ in parts if catalog.price(i, region).per_hour is None] if groups and known else []
    price = known[0][0] if left_out else next((p for p, _ in prices if p.per_hour is None), prices[0][0])
    # None: the catalog knows no price for the type.
    per_hour = None if price.per_hour is None else sum(p.per_hour * n for p, n in known)  # type: ignore[operator]
    hours = spec.compute.max_run / 3600
    spot_hour = per_hour * (1 - catalog.spot_discount_estimate) if spec.compute.spot and per_hour is not None else None
    return Cost(per_hour, None if per_hour is None else per_hour * hours, spot_hour,
                spot_hour * hours if spot_hour is not None else None,
                catalog.price_source, catalog.price_date, price.region, price.region_note, price.note,
                price.is_estimate, tuple(left_out))


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _instance(loaded: LoadedSpec, catalog: Catalog, requested_strategy: str,
              groups: list[instance_groups.Group]) -> tuple[InstanceType, str]:
    c = loaded.spec.compute
    if groups:
        group, reason = instance_groups.planned_group(loaded, groups)
        return group.instance, reason
    if c.prefer:
        first = choices.candidates(loaded, catalog, None)[0].instance
        return first, "compute.prefer: the first choice with capacity runs; this is choice 1"
    if c.instance_type != "auto":
        return explicit_instance(catalog, c.instance_type, loaded.region)
    allowed = distribution.allowed_instances(requested_strategy)
    selection = select_instance(catalog, c.gpu, c.gpus_per_node, c.min_gpu_memory,
                                allowed[0] if allowed else None, allowed[1] if allowed else None, region=loaded.region)
    return selection.instance, selection.reason


def build_plan(loaded: LoadedSpec, catalog: Catalog, today: date | None = None, *, fetch_code: bool = True) -> Plan:
    """Decide everything about the job; raise SpecError (with positions) if it cannot run. `today` (UTC by
    default) decides which TensorFlow images are still patched. code.git is cloned and its commit resolved
    first (fetch_code=False: a remote repository only as far as the cache answers, for validate)."""
    plan, problems = plan_with_problems(loaded, catalog, today, fetch_code=fetch_code)
    if problems or plan is None:
        raise SpecError(problems)
    return plan


def plan_with_problems(loaded: LoadedSpec, catalog: Catalog, today: date | None = None, *,
                       fetch_code: bool = True) -> tuple[Plan | None, list[Problem]]:
    """build_plan for `validate`, which reports every problem in one run: the plan's problems, and the
    plan as the spec asks for it even so (the code's checks read it), or None where no plan can be
    made (an instance type the catalog does not know, a repository that cannot be read)."""
    try:
        return _build(loaded, catalog, today, fetch_code)
    except SpecError as exc:
        return None, list(exc.problems)


def _build(loaded: LoadedSpec, catalog: Catalog, today: date | None, fetch_code: bool
           ) -> tuple[Plan | None, list[Problem]]:
    loaded, git = git_source.resolve(loaded, fetch=fetch_code)
    spec = loaded.spec
    problems: list[Problem] = []
    warnings: list[Problem] = []
    region = loaded.region
    if region is None:
        problems.append(loaded.problem(("region",), "no AWS region: set `region:` in the spec, or AWS_REGION"))
    try:
        groups = instance_groups.groups(loaded, catalog)
        instance, instance_reason = _instance(loaded, catalog, spec.distribution.strategy, groups)
    except CatalogError as exc:
        field = ("compute", "instance_type") if spec.compute.instance_type != "auto" else ("compute",)
        raise SpecError(problems + [loaded.problem(field, str(exc))]) from None
    if spec.compute.instance_type != "auto" and not spec.compute.prefer and not groups:
        for name in ("gpu", "min_gpu_memory"):
            if getattr(spec.compute, name) is not None:
                warnings.append(loaded.problem(("compute", name), "used only with instance_type auto; "
                                               f"{instance.name} is fixed"))
        blackwell = tensorflow_warning(instance, spec.tensorflow.image_uri)  # auto never picks such a type
        if blackwell:
            warnings.append(loaded.problem(("compute", "instance_type"), blackwell))
    # The image is for one type: a cluster's, as SDK v2 picks it (smtrain.plan.instance_groups).
    image_type = instance_groups.image_group(groups).instance.name if groups else instance.name
    tf_image, tf_problems, tf_warnings = choose_image(loaded, today, image_type)
    problems += tf_problems
    warnings += tf_warnings
    framework_version, py_version = tf_image.version, tf_image.python
    keras, keras_problems, keras_warnings = keras_choice.choose(loaded, framework_version)
    problems += keras_problems
    warnings += keras_warnings
    # The one instance, or each of compute.prefer's: its strategy as the container will decide it.
    group = instance_groups.planned_group(loaded, groups)[0] if groups else None
    decided = choices.decide(loaded, choices.candidates(loaded, catalog, instance, group), framework_version)
    tf_image = for_distribution(tf_image, region, image_type, decided.sdk_distribution)
    problems += decided.errors
    warnings += decided.warnings + choices.auto_only_warnings(loaded)
    if spec.code.entry_point is None:
        errors, notes = entrypoint_rules.check(loaded, framework_version, py_version)
        problems += errors
        warnings += notes
    warnings += program.unused_training_fields(loaded)
    warnings += _missing_local_inputs(loaded)
    environment, clashes = program.environment(loaded, tf_image.image_uri)
    problems += clashes
    if git is not None:
        environment, git_clashes, git_notes = git_source.plan_environment(loaded, git, environment)
        problems += git_clashes
        warnings += git_notes
    try:
        plan = _plan(loaded, catalog, git, decided, instance, instance_reason, tf_image, environment, warnings,
                     region, tuple(groups))
        plan = replace(plan, keras=keras)
    except Exception:
        if not problems:
            raise
        return None, problems  # the problems above left nothing to make a plan of
    return plan, problems


def _missing_local_inputs(loaded: LoadedSpec) -> list[Problem]:
    """An input on this machine (a path or file:// URI, for `submit --local`) that is not there yet: a warning at
    its field (the local run fails at its start unless something makes it first, as `make demo` makes the demo's
    data); an s3:// input is SageMaker's to read."""
    from smtrain.errors import UserError
    from smtrain.spec.local_uri import local_path

    out = []
    places: list[tuple[tuple[str, ...], str | None]] = [(("inputs", name), channel.uri)
                                                        for name, channel in loaded.spec.inputs.items()]
    places.append((("model_uri",), loaded.spec.model_uri))
    for at, uri in places:
        if uri is None or "://" in uri and not uri.startswith("file://"):
            continue  # s3:// (and the URIs SageMaker reads): no place on this machine
        try:
            path = local_path(uri, loaded.base_dir)
        except UserError as exc:
            out.append(loaded.problem(at, str(exc)))
            continue
        if not path.exists():
            out.append(loaded.problem(at, f"{uri} does not exist on this machine ({path}): "
                                      "the local run fails unless it is made first (or give an s3:// URI)"))
    return out


def _plan(loaded: LoadedSpec, catalog: Catalog, git: git_source.GitCheckout | None, decided: choices.Decided,
          instance: InstanceType, instance_reason: str, tf_image: TfChoice, environment: dict[str, str],
          warnings: list[Problem], region: str | None, groups: tuple[instance_groups.Group, ...] = ()) -> Plan:
    spec = loaded.spec
    framework_version, py_version = tf_image.version, tf_image.python
    first = decided.choices[0]
    nodes, strategy, strategy_reason = first.nodes, first.strategy, first.strategy_reason
    processes, replicas = first.processes_per_host, first.replicas
    kind = program.kind(spec)
    hps = program.hyperparameters(spec)
    entry_point = program.entry_point(spec)
    hosts = launch.host_names(nodes)
    maths = _maths(spec, replicas)
    planned = tuple(replace(c, batch_per_replica=m.batch_per_replica, global_batch=m.global_batch,
                            effective_batch=m.effective_batch, scaled_learning_rate=m.scaled_learning_rate,
                            wrap=_wrap(spec, c.replicas), cost=_cost(catalog, spec, c.instance, c.nodes, region, groups))
                    for c, m in ((c, _maths(spec, c.replicas)) for c in decided.choices))
    plan = Plan(
        spec=spec,
        base_dir=loaded.base_dir,
        region=region or "",
        instance=instance,
        instance_reason=instance_reason,
        nodes=nodes,
        strategy=strategy,
        strategy_reason=strategy_reason,
        processes_per_host=processes,
        replicas=replicas,
        batch_per_replica=maths.batch_per_replica,
        global_batch=maths.global_batch,
        gradient_accumulation_steps=maths.gradient_accumulation_steps,
        effective_batch=maths.effective_batch,
        learning_rate=maths.learning_rate,
        scaled_learning_rate=maths.scaled_learning_rate,
        framework_version=framework_version,
        py_version=py_version,
        image_uri=tf_image.image_uri,
        tf_image=tf_image,
        distribution=decided.sdk_distribution,
        entry_point=entry_point,
        hyperparameters=hps,
        launch=launch.preview(strategy, hosts, processes, instance.name, spec.distribution.mpi_options,
                              entry_point, hps),
        cost=planned[0].cost,
        choices=planned,
        instance_groups=groups,
        kind=kind,
        script=spec.code.entry_point,
        wrap=_wrap(spec, replicas),
        strategy_told=program.strategy_told(kind, strategy, nodes, instance.gpus, processes),
        environment=environment,
        metrics=declared_metrics.declared(spec, loaded.base_dir),
        metric_lines=declared_metrics.prints_metric_lines(spec, loaded.base_dir),
        git=git,
        warnings=warnings,
        source=loaded.source,
    )
    return plan
