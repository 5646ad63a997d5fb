"""Test helpers that prove code stays offline.

Two independent layers, so that one cannot hide a gap in the other:

* ``socket_guard()`` makes every outbound socket operation (connect, create_connection, name
  resolution) raise :class:`NetworkBlocked` and records the attempt. It catches everything:
  botocore, ``requests`` (the SageMaker SDK's telemetry), urllib, raw sockets.
* ``botocore_guard()`` registers a ``before-send`` handler on every botocore client created while
  it is active. botocore emits ``before-send`` with the fully prepared HTTP request just before
  handing it to urllib3, so the handler sees exactly which AWS call would have gone out (service,
  operation, URL) even when the socket layer would only see an address.

``offline()`` combines both. Install it before importing the code under test when the import
itself might open connections (boto3 clients built at import time).

Unix-domain sockets stay allowed: they never leave the machine and pytest/multiprocessing may use
them.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


class NetworkBlocked(RuntimeError):
    """Raised in place of any network operation while a guard is active."""


@dataclass
class Attempts:
    """What the guards refused, in order: ("socket", detail) or ("botocore", detail)."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, layer: str, detail: str) -> None:
        self.items.append((layer, detail))

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def _is_local_family(sock: socket.socket) -> bool:
    return getattr(socket, "AF_UNIX", None) is not None and sock.family == socket.AF_UNIX


@contextlib.contextmanager
def socket_guard(attempts: Attempts | None = None) -> Iterator[Attempts]:
    """Refuse and record every outbound network operation inside the block."""
    attempts = attempts if attempts is not None else Attempts()
    saved = {
        "connect": socket.socket.connect,
        "connect_ex": socket.socket.connect_ex,
        "sendto": socket.socket.sendto,
        "create_connection": socket.create_connection,
        "getaddrinfo": socket.getaddrinfo,
        "gethostbyname": socket.gethostbyname,
        "gethostbyname_ex": socket.gethostbyname_ex,
    }

    def refuse(what: str) -> None:
        attempts.add("socket", what)
        raise NetworkBlocked(f"network access blocked by test guard: {what}")

    def connect(self: socket.socket, address: Any) -> None:
        if _is_local_family(self):
            return saved["connect"](self, address)
        refuse(f"connect {address!r}")

    def connect_ex(self: socket.socket, address: Any) -> int:
        if _is_local_family(self):
            return saved["connect_ex"](self, address)
        refuse(f"connect_ex {address!r}")
        return 1  # unreachable

    def sendto(self: socket.socket, *args: Any) -> int:
        if _is_local_family(self):
            return saved["sendto"](self, *args)
        refuse(f"sendto {args[-1]!r}")
        return 0  # unreachable

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        refuse(f"create_connection {address!r}")
        raise AssertionError("unreachable")

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list:
        refuse(f"getaddrinfo {host!r}:{port!r}")
        return []  # unreachable

    def gethostbyname(host: str) -> str:
        refuse(f"gethostbyname {host!r}")
        return ""  # unreachable

    def gethostbyname_ex(host: str) -> tuple:
        refuse(f"gethostbyname_ex {host!r}")
        return ()  # unreachable

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.socket.sendto = sendto  # type: ignore[method-assign]
    socket.create_connection = create_connection  # type: ignore[assignment]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.gethostbyname = gethostbyname  # type: ignore[assignment]
    socket.gethostbyname_ex = gethostbyname_ex  # type: ignore[assignment]
    try:
        yield attempts
    finally:
        socket.socket.connect = saved["connect"]  # type: ignore[method-assign]
        socket.socket.connect_ex = saved["connect_ex"]  # type: ignore[method-assign]
        socket.socket.sendto = saved["sendto"]  # type: ignore[method-assign]
        socket.create_connection = saved["create_connection"]  # type: ignore[assignment]
        socket.getaddrinfo = saved["getaddrinfo"]  # type: ignore[assignment]
        socket.gethostbyname = saved["gethostbyname"]  # type: ignore[assignment]
        socket.gethostbyname_ex = saved["gethostbyname_ex"]  # type: ignore[assignment]


def make_before_send_recorder(attempts: Attempts, *, refuse: bool = True):
    """A botocore ``before-send`` handler that records the request and (by default) refuses it."""

    def before_send(request: Any = None, event_name: str = "before-send", **_: Any) -> None:
        method = getattr(request, "method", "?")
        url = getattr(request, "url", "?")
        attempts.add("botocore", f"{event_name} {method} {url}")
        if refuse:
            raise NetworkBlocked(f"AWS request blocked by test guard: {event_name} {method} {url}")

    return before_send


def register_on(events: Any, attempts: Attempts, *, refuse: bool = True) -> None:
    """Register the recorder on one event system: a botocore session's or ``client.meta.events``."""
    events.register("before-send", make_before_send_recorder(attempts, refuse=refuse))


@contextlib.contextmanager
def botocore_guard(attempts: Attempts | None = None, *, refuse: bool = True) -> Iterator[Attempts]:
    """Record (and refuse) every AWS request of every botocore client created inside the block.

    botocore has no process-wide event bus, so the hook goes where every client is born:
    ``botocore.session.Session.create_client`` (boto3 clients and resources use it too).
    """
    import botocore.session

    attempts = attempts if attempts is not None else Attempts()
    original = botocore.session.Session.create_client

    def create_client(self: Any, *args: Any, **kwargs: Any) -> Any:
        client = original(self, *args, **kwargs)
        register_on(client.meta.events, attempts, refuse=refuse)
        return client

    botocore.session.Session.create_client = create_client  # type: ignore[method-assign]
    try:
        yield attempts
    finally:
        botocore.session.Session.create_client = original  # type: ignore[method-assign]


@contextlib.contextmanager
def offline() -> Iterator[Attempts]:
    """Both guards, sharing one record of refused attempts."""
    attempts = Attempts()
    with socket_guard(attempts), botocore_guard(attempts):
        yield attempts
