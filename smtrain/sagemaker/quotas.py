"""Service Quotas before spending: does the job fit the account's instance quota in its region?

SageMaker's quota for a training instance type is named "<type> for training job usage" (managed
spot: "<type> for spot training job usage"), per account and region; a new account's is 0 for most
GPU types. Quota codes (L-...) are not published as a table, so they are found by name:
ListServiceQuotas first, the account's applied values (AWS documents that "if the applied quota value
is not available for a quota, the quota is not retrieved"), then ListAWSDefaultServiceQuotas for AWS's
default of the names still missing. Both are paged (at most 100 a page) and the listing stops as soon
as every name wanted is found.

In use: the instances of that type that the account's InProgress training jobs hold
(ListTrainingJobs, then DescribeTrainingJob for ResourceConfig and EnableManagedSpotTraining). Not
counted: instances kept in warm pools by jobs that have ended (AWS counts them against the training
quota), tuning trials not created yet, a fallback-list job before SageMaker has picked its type, and
jobs that start while the check runs. AWS's own check when the job is created (ResourceLimitExceeded,
exit 4) stays behind this one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from smtrain import exit_codes
from smtrain.aws import boto_session, explain, is_not_found
from smtrain.errors import AwsError
from smtrain.plan.build import Plan
from smtrain.redact import mask_text
from smtrain.sagemaker.backend import console_domain

SERVICE_CODE = "sagemaker"
_PAGE = 100  # the most either listing gives a page


def quota_name(instance_type: str, spot: bool) -> str:
    """Service Quotas' name of the training quota of `instance_type` ("ml.g5.xlarge for training job usage")."""
    return f"{instance_type} for {'spot ' if spot else ''}training job usage"


def increase_command(code: str, value: int, region: str) -> str:
    return (f"aws service-quotas request-service-quota-increase --service-code {SERVICE_CODE} --quota-code {code} "
            f"--desired-value {value} --region {region}")


def console_url(code: str, region: str) -> str:
    return f"https://{console_domain(region)}/servicequotas/home/services/{SERVICE_CODE}/quotas/{code}"


@dataclass(frozen=True)
class Quota:
    name: str
    code: str
    value: int
    default: bool  # AWS's default value: the account has no applied value of its own


@dataclass(frozen=True)
class Running:
    """Instances of one type that a running job holds."""

    job: str
    instance_type: str
    count: int
    spot: bool


@dataclass(frozen=True)
class Fit:
    """One choice (instance type x count) against its quota."""

    instance_type: str
    count: int
    spot: bool
    quota: Quota | None  # None: Service Quotas has no quota of that name here (or could not be read)
    running: tuple[Running, ...] | None  # None: the running jobs could not be counted

    @property
    def quota_name(self) -> str:
        return quota_name(self.instance_type, self.spot)

    @property
    def in_use(self) -> int | None:
        return None if self.running is None else sum(r.count for r in self.running)

    @property
    def fits(self) -> bool | None:
        """True / False, or None when it cannot be told (no quota; or usage unknown and the job alone fits)."""
        if self.quota is None:
            return None
        if self.in_use is None:
            return False if self.count > self.quota.value else None
        return self.in_use + self.count <= self.quota.value

    @property
    def needed(self) -> int:
        """The quota value that would let this choice run now."""
        return (self.in_use or 0) + self.count

    def numbers(self, region: str) -> str:
        """'"ml.g5.xlarge for training job usage" is 4 in us-east-1 (L-...), 1 in use (job-a), 2 wanted'."""
        q = self.quota
        assert q is not None
        default = ", AWS's default: the account has no value of its own" if q.default else ""
        if self.running is None:
            used = "in use unknown"
        else:
            by = ", ".join(f"{r.job}: {r.count}" for r in self.running)
            used = f"{self.in_use} in use" + (f" ({by})" if by else "")
        return f'"{q.name}" is {q.value} in {region} ({q.code}{default}); {used}; {self.count} wanted'

    def line(self, region: str) -> str:
        what = f"{self.instance_type} x {self.count}{' (spot)' if self.spot else ''}"
        if self.quota is None:
            return f'quota: {what}: no quota named "{self.quota_name}" found in {region}: not checked'
        verdict = {True: "fits", False: "does not fit", None: "may fit"}[self.fits]
        zero = " (0: where a new account starts for most GPU types)" if self.quota.value == 0 else ""
        return f"quota: {what} {verdict}: {self.numbers(region)}{zero}"

    def to_dict(self, region: str) -> dict[str, Any]:
        q = self.quota
        return {"instance_type": self.instance_type, "count": self.count, "spot": self.spot,
                "quota_name": self.quota_name, "quota_code": q.code if q else None,
                "quota": q.value if q else None, "quota_is_default": q.default if q else None,
                "in_use": self.in_use,
                "in_use_by": None if self.running is None else [{"job": r.job, "count": r.count}
                                                                 for r in self.running],
                "fits": self.fits,
                "increase_command": increase_command(q.code, self.needed, region) if q and not self.fits else None}


@dataclass(frozen=True)
class QuotaCheck:
    region: str
    fits: tuple[Fit, ...]  # one per choice, in the plan's order; none when quotas could not be read
    notes: tuple[str, ...] = ()  # what could not be checked, one line each
    # A heterogeneous cluster's types, each needed at once (compute.instance_groups), not choices.
    together: bool = False

    @property
    def refused(self) -> bool:
        """Every choice (a cluster: any of its types) is known not to fit: nothing may be sent."""
        known_not = [f.fits is False for f in self.fits]
        return bool(self.fits) and (any(known_not) if self.together else all(known_not))

    def lines(self) -> list[str]:
        lines = [f.line(self.region) for f in self.fits] + [f"note: {n}" for n in self.notes]
        if len(self.fits) > 1 and not self.refused and not self.together:
            fitting = [f"{f.instance_type} x {f.count}" for f in self.fits if f.fits is not False]
            lines.append(f"quota: {len(fitting)} of {len(self.fits)} choices may run: {', '.join(fitting)}")
        return lines

    def refusal(self) -> str:
        """The message when nothing fits: the numbers, and how to ask for more."""
        lines = [f"the job does not fit the account's SageMaker quota in {self.region}; nothing was uploaded "
                 "or created:"]
        lines += [f"  {f.instance_type} x {f.count}: {f.numbers(self.region)}" for f in self.fits]
        zero = any(f.quota is not None and f.quota.value == 0 for f in self.fits)
        lines.append("Ask for an increase" + (" (a quota of 0 is where a new account starts for most GPU types)"
                                              if zero else "") + ", in a terminal or in the console:")
        for f in (f for f in self.fits if f.fits is False):
            assert f.quota is not None  # a choice that does not fit has a quota
            lines += [f"  {increase_command(f.quota.code, f.needed, self.region)}",
                      f"  {console_url(f.quota.code, self.region)}"]
        lines.append("Or stop running jobs, or pick another instance type (`submit --no-quota-check` skips this "
                     "check).")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        fits = [f.fits for f in self.fits]
        return {"region": self.region, "fits": True if True in fits else (False if self.refused else None),
                "choices": [f.to_dict(self.region) for f in self.fits], "notes": list(self.notes)}


def _wanted(plan: Plan) -> list[tuple[str, int]]:
    """(instance type, count) of every choice the plan may run, in its order; a heterogeneous cluster's types,
    each with its groups' instances together."""
    if plan.instance_groups:
        counts: dict[str, int] = {}
        for group in plan.instance_groups:
            counts[group.instance.name] = counts.get(group.instance.name, 0) + group.count
        return list(counts.items())
    return [(choice.instance.name, choice.nodes) for choice in plan.choices]


def _quotas(client: Any, operation: str) -> Iterator[dict[str, Any]]:
    pages = client.get_paginator(operation).paginate(ServiceCode=SERVICE_CODE, PaginationConfig={"PageSize": _PAGE})
    for page in pages:
        yield from page.get("Quotas", [])


def find_quotas(client: Any, names: set[str]) -> dict[str, Quota]:
    """The quotas called `names`: the account's applied value, else AWS's default."""
    found: dict[str, Quota] = {}
    for operation, default in (("list_service_quotas", False), ("list_aws_default_service_quotas", True)):
        for q in _quotas(client, operation) if names - found.keys() else ():
            name = q.get("QuotaName")
            if name in names and name not in found and q.get("Value") is not None:
                found[name] = Quota(name, q["QuotaCode"], int(q["Value"]), default)
                if not names - found.keys():
                    break
    return found


def _instances(resources: dict[str, Any]) -> list[tuple[str, int]]:
    """(type, count) a running job holds: its instance groups, else the type SageMaker picked or was given."""
    groups = resources.get("InstanceGroups") or []
    if groups:
        return [(g["InstanceType"], g.get("InstanceCount", 1)) for g in groups]
    kind = resources.get("SelectedInstanceType") or resources.get("InstanceType")
    return [(kind, resources.get("SelectedInstanceCount") or resources.get("InstanceCount") or 1)] if kind else []


def running_instances(sagemaker: Any) -> list[Running]:
    """The instances every InProgress training job of the account holds in the client's region."""
    running = []
    pages = sagemaker.get_paginator("list_training_jobs").paginate(StatusEquals="InProgress",
                                                                   PaginationConfig={"PageSize": _PAGE})
    for page in pages:
        for summary in page.get("TrainingJobSummaries", []):
            name = summary["TrainingJobName"]
            try:
                d = sagemaker.describe_training_job(TrainingJobName=name)
            except Exception as exc:
                if is_not_found(exc):
                    continue  # deleted meanwhile
                raise
            if d.get("TrainingJobStatus") != "InProgress":
                continue  # ended meanwhile: its instances are free
            spot = bool(d.get("EnableManagedSpotTraining"))
            running += [Running(name, kind, count, spot) for kind, count in _instances(d.get("ResourceConfig") or {})]
    return running


def _unanswered(exc: BaseException, action: str) -> str:
    """Why an advisory call gave no answer, in one line. Missing or expired credentials end the command
    here (exit 4, one line): nothing can be sent without them, and the job's own call would say the same.
    An error that is not AWS's is raised again."""
    from botocore import exceptions as bx

    line = explain(exc, action)
    if line is None:
        raise exc
    if isinstance(exc, (bx.NoCredentialsError, bx.PartialCredentialsError, bx.ProfileNotFound, bx.TokenRetrievalError,
                        bx.SSOTokenLoadError, bx.UnauthorizedSSOTokenError, bx.CredentialRetrievalError,
                        bx.NoAuthTokenError)):
        raise AwsError(mask_text(line), exit_codes.API) from exc
    return line


def check_quotas(plan: Plan) -> QuotaCheck:
    """Each choice of `plan` against its quota in the plan's region.

    The check only advises: whatever keeps AWS from answering (no permission, a server error, a
    throttle that outlasts the retries, an endpoint without Service Quotas, a timeout) becomes one
    note and the command goes on; the job's own calls then say what they meet. Only a known answer
    that no choice fits refuses the submit (QuotaCheck.refused)."""
    region, spot = plan.region, plan.spec.compute.spot
    wanted = _wanted(plan)
    notes: list[str] = []
    names = {quota_name(kind, spot) for kind, _ in wanted}
    action = f"read the account's SageMaker quotas in {region} (Service Quotas)"
    try:
        session = boto_session(region)
        quotas = find_quotas(session.client("service-quotas"), names)
    except Exception as exc:  # noqa: BLE001 - advisory: AWS's answer, whatever it is, becomes a note
        note = f"{_unanswered(exc, action)}; the quota check is skipped (--no-quota-check: no check, no note)"
        return QuotaCheck(region, (), (note,))
    running: list[Running] | None = None
    if quotas:
        action = f"count the instances of running training jobs in {region}"
        try:
            running = running_instances(session.client("sagemaker"))
        except Exception as exc:  # noqa: BLE001 - advisory, as above
            notes.append(f"{_unanswered(exc, action)}; each choice is compared with its quota alone")
    fits = []
    for kind, count in wanted:
        in_use = None if running is None else tuple(r for r in running if r.instance_type == kind and r.spot == spot)
        fits.append(Fit(kind, count, spot, quotas.get(quota_name(kind, spot)), in_use))
    return QuotaCheck(region, tuple(fits), tuple(notes), together=bool(plan.instance_groups))
