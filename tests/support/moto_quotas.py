"""Service Quotas for SageMaker on the moto server: what moto lacks, added for the tests.

moto 5.2.5's service-quotas answers ListAWSDefaultServiceQuotas and GetServiceQuota for the service
code ``vpc`` alone, without pages, and has no ListServiceQuotas at all: it knows no SageMaker quota.
Added here (moto_server.install applies :func:`patches`), for service code ``sagemaker`` only:

* a quota for every training instance type of botocore's TrainingInstanceType enum, on demand and
  spot, as AWS has: applied value 64 (an account that may train; a test sets 0 where it wants a new
  account's), AWS's default 0;
* ListServiceQuotas: the account's applied values (a quota a test set with ``applied=False`` is left
  out, as AWS leaves out a quota whose applied value is not available);
* ListAWSDefaultServiceQuotas and GetServiceQuota: AWS's defaults;
* pages of MaxResults (default 100) with NextToken, as AWS pages them (several pages: a client must
  follow them);
* ``denied``: every Service Quotas call answers AccessDeniedException (an account whose credentials
  lack servicequotas:*), and the faults of moto_server.Control.inject for these operations.

Other service codes keep moto's own answers.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.servicequotas.responses import ServiceQuotasResponse

SERVICE = "sagemaker"
ROOMY = 64  # the applied value of every training quota unless a test sets another
_OPERATIONS = {"ListServiceQuotas": "list_service_quotas",
               "ListAWSDefaultServiceQuotas": "list_aws_default_service_quotas",
               "GetServiceQuota": "get_service_quota"}


def _training_quota_names() -> list[str]:
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    types = model.shape_for("TrainingInstanceType").enum
    return [f"{kind} for {usage}" for kind in types for usage in ("training job usage", "spot training job usage")]


def quota_code(name: str) -> str:
    """A stable made-up code in AWS's form ("L-1A2B3C4D")."""
    return "L-" + hashlib.sha256(name.encode()).hexdigest()[:8].upper()


class Quotas:
    """The SageMaker quotas the server answers with; a test sets them (`aws.control.quotas`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._applied: dict[str, float] = dict.fromkeys(_NAMES, ROOMY)
            self._defaults: dict[str, float] = dict.fromkeys(_NAMES, 0)
            self.denied = False
            self.calls: list[str] = []

    def set(self, name: str, value: float, *, applied: bool = True, default: float = 0) -> str:
        """Quota `name` ("ml.g5.xlarge for training job usage") is `value` for the account (or, with
        applied=False, only AWS's default is known: `value`). Returns its code."""
        with self._lock:
            if applied:
                self._applied[name] = value
                self._defaults[name] = default
            else:
                self._applied.pop(name, None)
                self._defaults[name] = value
        return quota_code(name)

    def forget(self, name: str) -> None:
        """Service Quotas has no quota called `name` (a type AWS gives no training quota)."""
        with self._lock:
            self._applied.pop(name, None)
            self._defaults.pop(name, None)

    def _entries(self, applied: bool) -> list[dict[str, Any]]:
        with self._lock:
            values = sorted((self._applied if applied else self._defaults).items())
        return [_entry(name, value) for name, value in values]

    def page(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        entries = self._entries(applied=operation == "ListServiceQuotas")
        start = int(params.get("NextToken") or 0)
        size = int(params.get("MaxResults") or 100)
        answer: dict[str, Any] = {"Quotas": entries[start:start + size]}
        if start + size < len(entries):
            answer["NextToken"] = str(start + size)
        return answer

    def one(self, code: str) -> dict[str, Any]:
        for entry in self._entries(applied=True) + self._entries(applied=False):
            if entry["QuotaCode"] == code:
                return entry
        raise JsonRESTError("NoSuchResourceException", f"The request failed because the quota {code} does not exist.")


_NAMES = _training_quota_names()


def _entry(name: str, value: float) -> dict[str, Any]:
    code = quota_code(name)
    return {"ServiceCode": SERVICE, "ServiceName": "Amazon SageMaker", "QuotaCode": code, "QuotaName": name,
            "QuotaArn": f"arn:aws:servicequotas:us-east-1::{SERVICE}/{code}", "Value": value, "Unit": "None",
            "Adjustable": True, "GlobalQuota": False}


def patches(quotas: Quotas, take_fault: Callable[[str], Any]) -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement) for moto_server.install; `take_fault` is Control.take."""
    result = []
    for operation, attr in _OPERATIONS.items():
        original = ServiceQuotasResponse.__dict__.get(attr)

        def handler(self: Any, operation: str = operation, original: Any = original) -> str:
            params = json.loads(self.body or "{}")
            if params.get("ServiceCode") != SERVICE and original is not None:
                return str(original(self))
            quotas.calls.append(operation)
            fault = take_fault(operation)
            if fault:
                fault.raise_error()
            if quotas.denied:
                raise JsonRESTError("AccessDeniedException", "User: arn:aws:iam::123456789012:user/ci is not "
                                    f"authorized to perform: servicequotas:{operation}")
            if operation == "GetServiceQuota":
                return json.dumps({"Quota": quotas.one(str(params.get("QuotaCode")))})
            return json.dumps(quotas.page(operation, params))

        result.append((ServiceQuotasResponse, attr, handler))
    return result
