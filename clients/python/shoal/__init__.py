# SPDX-License-Identifier: Apache-2.0
"""Python client of the Shoal hub's REST/JSON API (docs/rest.md).

Standard library only (urllib and ssl). Authenticates with a client
certificate of the hub CA (mTLS) or an OIDC ID token (bearer), as the
hub's gRPC API does; the hub applies the same authorization to both.

    from shoal import Client
    c = Client("https://hub.example:7444", ca_file="ca.pem",
               cert_file="me.pem", key_file="me-key.pem")
    job = c.submit({"apiVersion": "shoal.dev/v1alpha1", "kind": "Job", ...})
    for phase in c.follow(job["metadata"]["name"]):
        print(phase)
"""

from .client import TERMINAL_PHASES, Client, Event, ShoalError

__all__ = ["Client", "Event", "ShoalError", "TERMINAL_PHASES"]
