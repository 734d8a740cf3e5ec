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


if __name__ == "__main__":
    unittest.main()
