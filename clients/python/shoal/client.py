# SPDX-License-Identifier: Apache-2.0
"""The Shoal hub REST client: jobs (submit, get, list, watch, follow,
cancel), inference services, queues, clusters and whoami."""

import http.client
import json
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Union

#: The job phases after which nothing changes (apis/v1alpha1 JobPhase.Terminal).
TERMINAL_PHASES = frozenset({"Succeeded", "Failed", "Cancelled"})

#: gRPC codes with which the hub ends a watch when it stops (Canceled,
#: Unavailable): the stream is over, not failed; watch again.
_STREAM_ENDED = frozenset({1, 14})

#: How often follow reopens its watch after connection errors in a row
#: (about a minute of backoff) before it gives up.
FOLLOW_RETRIES = 15

API_VERSION = "shoal.dev/v1alpha1"


_UNAVAILABLE = 14  # the gRPC status code Unavailable


class ShoalError(Exception):
    """A call the hub refused or failed: ``status`` is the HTTP status,
    ``code`` the gRPC status code (16 Unauthenticated, 7 PermissionDenied,
    5 NotFound, 3 InvalidArgument, ...) and ``message`` the hub's reason."""

    def __init__(self, status: int, code: int, message: str):
        super().__init__(f"HTTP {status} (code {code}): {message}")
        self.status = status
        self.code = code
        self.message = message


@dataclass
class Event:
    """One change a watch reports: type is ADDED, MODIFIED or DELETED,
    record the object, revision the store revision to resume after."""

    type: str
    record: Dict[str, Any]
    revision: int


class Client:
    """A client of one hub's REST face (shoal-hub --rest-listen).

    url: https://host:port of the REST listener.
    ca_file: the hub CA certificate (PEM) the serving certificate must
      chain to; default the system roots.
    cert_file, key_file: a client certificate and key of the hub CA
      (`shoal user create`), for mTLS.
    token, token_file: an OIDC ID token sent as ``Authorization: Bearer``
      (the hub runs with --oidc-issuer-url); token_file is re-read at every
      call, so a refreshed token is picked up.
    timeout: seconds for each unary call (watches wait without a limit).
    """

    def __init__(self, url: str, ca_file: Optional[str] = None,
                 cert_file: Optional[str] = None, key_file: Optional[str] = None,
                 token: Optional[str] = None, token_file: Optional[str] = None,
                 timeout: float = 30.0):
        if not url.startswith("https://"):
            raise ValueError(f"url {url!r}: the hub serves its REST API over https only")
        if (cert_file is None) != (key_file is None):
            raise ValueError("cert_file and key_file go together")
        if token is not None and token_file is not None:
            raise ValueError("pass token or token_file, not both")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._token = token
        self._token_file = token_file
        ctx = ssl.create_default_context(cafile=ca_file)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        if cert_file is not None:
            ctx.load_cert_chain(cert_file, key_file)
        self._opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))

    @classmethod
    def from_env(cls, **kw) -> "Client":
        """A client from SHOAL_REST_URL, SHOAL_CA_FILE, SHOAL_CERT_FILE,
        SHOAL_KEY_FILE, SHOAL_TOKEN and SHOAL_TOKEN_FILE (keyword
        arguments win)."""
        env = {"url": "SHOAL_REST_URL", "ca_file": "SHOAL_CA_FILE", "cert_file": "SHOAL_CERT_FILE",
               "key_file": "SHOAL_KEY_FILE", "token": "SHOAL_TOKEN", "token_file": "SHOAL_TOKEN_FILE"}
        args = {k: os.environ[v] for k, v in env.items() if os.environ.get(v)}
        args.update(kw)
        if "url" not in args:
            raise ValueError("SHOAL_REST_URL is not set")
        return cls(**args)

    # Jobs.

    def submit(self, job: Union[Dict[str, Any], str], dry_run: bool = False) -> Dict[str, Any]:
        """Submits a Job (a dict, or its JSON text) and returns the stored
        record. Submit is idempotent: the same name and spec returns the
        existing job; another spec under a taken name is refused (409)."""
        job = _object(job, "Job", "job")
        return self._record(self._call("POST", "/v1/jobs", body={"job": {"json": job}, "dryRun": dry_run}))

    def get(self, name: str) -> Dict[str, Any]:
        """The job's record (metadata, spec, status)."""
        return self._record(self._call("GET", "/v1/jobs/" + _seg(name)))

    def list(self, queue: Optional[str] = None, phase: Optional[str] = None,
             cluster: Optional[str] = None, page_size: int = 500) -> List[Dict[str, Any]]:
        """Every job (of the queue, in the phase, with a member on the
        cluster, when given) that the caller may see, all pages read."""
        items: List[Dict[str, Any]] = []
        cont = ""
        while True:
            q = {"queue": queue, "phase": phase, "cluster": cluster,
                 "options.limit": page_size, "options.continue": cont or None}
            resp = self._call("GET", "/v1/jobs", query=q)
            items.extend(self._record(o) for o in resp.get("items") or [])
            cont = (resp.get("meta") or {}).get("continue") or ""
            if not cont:
                return items

    def cancel(self, name: str) -> Dict[str, Any]:
        """Cancels the job and returns its record."""
        return self._record(self._call("POST", "/v1/jobs/" + _seg(name) + ":cancel", body={}))

    def report_checkpoint(self, name: str, step: int, uri: str,
                          time: Optional[str] = None) -> Dict[str, Any]:
        """Reports a checkpoint the job took (step, where it is, and when,
        RFC 3339; the hub's clock when left out) and returns the job's
        record: a gang placed again resumes from the latest
        (docs/checkpoints.md). An older step is refused."""
        body: Dict[str, Any] = {"step": step, "uri": uri}
        if time:
            body["time"] = time
        return self._record(self._call("POST", "/v1/jobs/" + _seg(name) + ":checkpoint", body=body))

    def watch(self, name: Optional[str] = None, revision: int = 0) -> Iterator[Event]:
        """Changes to jobs (only the one named, when given) after store
        revision `revision` (0: from now on), as they happen. The iterator
        ends when the hub ends the stream (it stops or restarts): watch
        again from the last event's revision to miss nothing."""
        q = {"name": name, "revision": revision or None}
        with self._open("GET", "/v1/jobs:watch", query=q, timeout=None) as resp:
            for line in resp:
                line = line.strip()
                if not line:
                    continue
                chunk = json.loads(line)
                if "error" in chunk:
                    e = chunk["error"] or {}
                    code = int(e.get("code", 2))
                    if code in _STREAM_ENDED:
                        return
                    raise ShoalError(200, code, e.get("message", "watch failed"))
                ev = chunk.get("result") or {}
                obj = ev.get("object") or {}
                yield Event(type=ev.get("type", ""), record=self._record(obj), revision=int(obj.get("revision") or 0))

    def follow(self, name: str) -> Iterator[str]:
        """Yields the job's phase now and every new phase it enters, until
        a terminal one (Succeeded, Failed, Cancelled), which it yields last.
        It resumes its watch from the last revision it saw when the hub
        ends the stream, the connection fails or the hub answers
        Unavailable (a hub restart), retrying with backoff up to
        FOLLOW_RETRIES times in a row."""
        obj = self._call("GET", "/v1/jobs/" + _seg(name))
        rev = int(obj.get("revision") or 0)
        phase = _phase(self._record(obj))
        yield phase
        failures = 0
        while phase not in TERMINAL_PHASES:
            try:
                for ev in self.watch(name=name, revision=rev):
                    failures = 0
                    rev = max(rev, ev.revision)
                    if ev.type == "DELETED":
                        raise ShoalError(404, 5, f"job {name!r} was deleted while followed")
                    p = _phase(ev.record)
                    if p != phase:
                        phase = p
                        yield phase
                        if phase in TERMINAL_PHASES:
                            return
            except (OSError, http.client.HTTPException, ShoalError) as e:
                # Unavailable (14): the hub answers but cannot serve yet,
                # as its REST face does for a moment after a restart.
                if isinstance(e, ShoalError) and e.code != _UNAVAILABLE:
                    raise
                failures += 1
                if failures > FOLLOW_RETRIES:
                    raise
                time.sleep(min(0.1 * 2 ** failures, 5.0))

    # Inference services (docs/inference.md).

    def create_service(self, service: Union[Dict[str, Any], str]) -> Dict[str, Any]:
        """Creates an InferenceService (a dict, or its JSON text) and
        returns the stored record; its model version must be registered,
        and a name taken is refused (409)."""
        service = _object(service, "InferenceService", "service")
        return self._record(self._call("POST", "/v1/services", body={"service": {"json": service}}))

    def update_service(self, service: Union[Dict[str, Any], str], revision: int = 0) -> Dict[str, Any]:
        """Replaces the spec of the service the record names (its queue
        stays) and returns the stored record: a new spec.model starts a
        rollout, new spec.replicas bounds a rescale. With revision (a
        record's metadata.resourceVersion) a service changed since is
        refused (409, code 10 Aborted)."""
        service = _object(service, "InferenceService", "service")
        name = (service.get("metadata") or {}).get("name") or ""
        if not name:
            raise ValueError("service has no metadata.name")
        body = {"service": {"json": service, "revision": str(revision)}}
        return self._record(self._call("PUT", "/v1/services/" + _seg(name), body=body))

    def get_service(self, name: str) -> Dict[str, Any]:
        """The service's record: spec, and status with the model served,
        the rollout, the load, the conditions and the endpoints."""
        return self._record(self._call("GET", "/v1/services/" + _seg(name)))

    def list_services(self, queue: Optional[str] = None) -> List[Dict[str, Any]]:
        """Every service (of the queue, when given) the caller may see."""
        resp = self._call("GET", "/v1/services", query={"queue": queue})
        return [self._record(o) for o in resp.get("items") or []]

    def delete_service(self, name: str) -> Dict[str, Any]:
        """Deletes the service (its replicas are cancelled) and returns its
        last record."""
        return self._record(self._call("DELETE", "/v1/services/" + _seg(name)))

    def report_service_load(self, name: str, value: int) -> Dict[str, Any]:
        """Reports the load a gateway sees for the service (requests
        queued or in flight; source user:<caller>), the autoscaler's
        signal, and returns the service's record. It counts until the
        caller's next report, or for 60 s."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"load {value!r}: must be a whole number, 0 or more")
        return self._record(self._call("POST", "/v1/services/" + _seg(name) + ":load", body={"value": str(value)}))

    # Other resources.

    def whoami(self) -> Dict[str, Any]:
        """Who the hub takes the caller for: user, method, bindings, ..."""
        return self._call("GET", "/v1/whoami")

    def can_i(self, verb: str, resource: str, queue: Optional[str] = None) -> Dict[str, Any]:
        """Whether the caller may do verb on resource (in queue): {allowed, reason, user}."""
        return self._call("GET", "/v1/cani", query={"verb": verb, "resource": resource, "queue": queue})

    def create_queue(self, queue: Dict[str, Any]) -> Dict[str, Any]:
        """Creates a Queue (a dict) and returns the stored record."""
        queue = dict(queue)
        queue.setdefault("apiVersion", API_VERSION)
        queue.setdefault("kind", "Queue")
        return self._record(self._call("POST", "/v1/queues", body={"queue": {"json": queue}}))

    def list_queues(self) -> List[Dict[str, Any]]:
        """Every queue."""
        return [self._record(o) for o in self._call("GET", "/v1/queues").get("items") or []]

    def list_clusters(self) -> List[Dict[str, Any]]:
        """Every cluster (admin)."""
        return [self._record(o) for o in self._call("GET", "/v1/clusters").get("items") or []]

    # Plumbing.

    @staticmethod
    def _record(obj: Dict[str, Any]) -> Dict[str, Any]:
        rec = obj.get("json")
        if not isinstance(rec, dict):
            raise ShoalError(200, 13, f"the hub answered an object without a record: {obj!r}")
        return rec

    def _headers(self) -> Dict[str, str]:
        h = {"Accept": "application/json"}
        token = self._token
        if self._token_file is not None:
            with open(self._token_file, encoding="utf-8") as f:
                token = f.read().strip()
        if token:
            h["Authorization"] = "Bearer " + token
        return h

    def _open(self, method: str, path: str, query: Optional[Dict[str, Any]] = None,
              body: Optional[Dict[str, Any]] = None, timeout: Optional[float] = -1.0):
        url = self.url + path
        if query:
            q = {k: str(v) for k, v in query.items() if v is not None and v != ""}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data = None
        headers = self._headers()
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            return self._opener.open(req, timeout=self.timeout if timeout == -1.0 else timeout)
        except urllib.error.HTTPError as e:
            raise _error(e) from None

    def _call(self, method: str, path: str, query: Optional[Dict[str, Any]] = None,
              body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        with self._open(method, path, query=query, body=body) as resp:
            return json.loads(resp.read() or b"{}")


def _object(obj: Union[Dict[str, Any], str], kind: str, what: str) -> Dict[str, Any]:
    """obj (a dict or its JSON text) as a dict, apiVersion and kind set when absent."""
    if isinstance(obj, (str, bytes)):
        obj = json.loads(obj)
    if not isinstance(obj, dict):
        raise TypeError(f"{what} must be a dict or its JSON text")
    obj = dict(obj)
    obj.setdefault("apiVersion", API_VERSION)
    obj.setdefault("kind", kind)
    return obj


def _seg(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _phase(job: Dict[str, Any]) -> str:
    return (job.get("status") or {}).get("phase") or ""


def _error(e: "urllib.error.HTTPError") -> ShoalError:
    raw = e.read()
    try:
        body = json.loads(raw)
        return ShoalError(e.code, int(body.get("code", 2)), body.get("message", ""))
    except (ValueError, AttributeError):
        return ShoalError(e.code, 2, raw.decode(errors="replace").strip() or e.reason)
