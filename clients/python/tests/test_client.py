# SPDX-License-Identifier: Apache-2.0
"""Offline checks of the client: argument validation and error parsing."""

import io
import unittest
import urllib.error

from shoal import Client, ShoalError
from shoal.client import _error


class ClientTest(unittest.TestCase):
    def test_https_only(self):
        with self.assertRaises(ValueError):
            Client("http://hub:7444")

    def test_cert_and_key_together(self):
        with self.assertRaises(ValueError):
            Client("https://hub:7444", cert_file="c.pem")

    def test_token_or_token_file(self):
        with self.assertRaises(ValueError):
            Client("https://hub:7444", token="t", token_file="f")

    def test_token_header(self):
        c = Client("https://hub:7444", token="abc")
        self.assertEqual(c._headers()["Authorization"], "Bearer abc")
        self.assertNotIn("Authorization", Client("https://hub:7444")._headers())

    def test_error_body(self):
        body = b'{"code":7,"message":"Jobs/Submit: viewer may not create jobs","details":[]}'
        e = _error(urllib.error.HTTPError("https://hub/v1/jobs", 403, "Forbidden", {}, io.BytesIO(body)))
        self.assertIsInstance(e, ShoalError)
        self.assertEqual((e.status, e.code, e.message), (403, 7, "Jobs/Submit: viewer may not create jobs"))

    def test_record_required(self):
        with self.assertRaises(ShoalError):
            Client._record({"json": None, "revision": "0"})


class ServiceCallsTest(unittest.TestCase):
    """The inference-service methods send the REST calls of rest.yaml."""

    def setUp(self):
        self.c = Client("https://hub:7444")
        self.calls = []

        def call(method, path, query=None, body=None):
            self.calls.append((method, path, query, body))
            if path == "/v1/services" and method == "GET":
                return {"items": [{"json": {"metadata": {"name": "chat"}}, "revision": "3"}]}
            return {"json": {"metadata": {"name": "chat"}}, "revision": "3"}

        self.c._call = call

    def test_paths_and_bodies(self):
        svc = {"metadata": {"name": "chat"}, "spec": {"queue": "serving", "model": "llm@1.0"}}
        self.assertEqual(self.c.create_service(svc)["metadata"]["name"], "chat")
        self.c.update_service('{"metadata": {"name": "chat"}, "spec": {}}', revision=12)
        self.c.get_service("chat")
        self.assertEqual(len(self.c.list_services(queue="serving")), 1)
        self.c.list_services()
        self.c.report_service_load("chat", 42)
        self.c.delete_service("chat")
        full = dict(svc, apiVersion="shoal.dev/v1alpha1", kind="InferenceService")
        self.assertEqual(self.calls, [
            ("POST", "/v1/services", None, {"service": {"json": full}}),
            ("PUT", "/v1/services/chat", None, {"service": {"json": {
                "metadata": {"name": "chat"}, "spec": {}, "apiVersion": "shoal.dev/v1alpha1", "kind": "InferenceService"},
                "revision": "12"}}),
            ("GET", "/v1/services/chat", None, None),
            ("GET", "/v1/services", {"queue": "serving"}, None),
            ("GET", "/v1/services", {"queue": None}, None),
            ("POST", "/v1/services/chat:load", None, {"value": "42"}),
            ("DELETE", "/v1/services/chat", None, None),
        ])
        self.assertNotIn("apiVersion", svc)  # the caller's dict is not changed

    def test_refused_before_sending(self):
        with self.assertRaises(ValueError):
            self.c.update_service({"spec": {}})
        for bad in (-1, 1.5, True, "3"):
            with self.assertRaises(ValueError):
                self.c.report_service_load("chat", bad)
        with self.assertRaises(TypeError):
            self.c.create_service(["not", "a", "service"])
        self.assertEqual(self.calls, [])


if __name__ == "__main__":
    unittest.main()
