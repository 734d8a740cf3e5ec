# SPDX-License-Identifier: Apache-2.0
"""The Python client against a real hub: test/integration/rest
(TestPythonClient) starts shoal-hub with --rest-listen, makes the queue
and a submitter, and runs this with SHOAL_REST_URL, SHOAL_CA_FILE,
SHOAL_CERT_FILE, SHOAL_KEY_FILE and SHOAL_TEST_QUEUE set; by hand, point
them at any hub (the jobs it submits are named py-*)."""

import os
import threading
import time
import unittest
import uuid

from shoal import Client, ShoalError, TERMINAL_PHASES

REQUIRED = ("SHOAL_REST_URL", "SHOAL_CA_FILE", "SHOAL_CERT_FILE", "SHOAL_KEY_FILE", "SHOAL_TEST_QUEUE")


def job(name, queue, gpus=1):
    return {
        "apiVersion": "shoal.dev/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "queue": queue,
            "gang": {"members": 2, "gpusPerMember": gpus},
            "template": {"spec": {"containers": [{"name": "train", "image": "busybox", "command": ["sleep", "3600"]}]}},
        },
    }


@unittest.skipUnless(all(os.environ.get(k) for k in REQUIRED), "needs a hub: set " + ", ".join(REQUIRED))
class HubTest(unittest.TestCase):
    def setUp(self):
        self.c = Client.from_env()
        self.queue = os.environ["SHOAL_TEST_QUEUE"]

    def name(self):
        return "py-" + uuid.uuid4().hex[:8]

    def test_whoami(self):
        who = self.c.whoami()
        self.assertEqual(who["method"], "certificate")
        self.assertTrue(who["user"])

    def test_submit_get_list(self):
        name = self.name()
        rec = self.c.submit(job(name, self.queue))
        self.assertEqual(rec["metadata"]["name"], name)
        self.assertEqual(rec["spec"]["gang"]["members"], 2)
        self.assertEqual(rec["status"]["phase"], "Pending")
        # Idempotent: the same spec returns the same job.
        again = self.c.submit(job(name, self.queue))
        self.assertEqual(again["metadata"]["uid"], rec["metadata"]["uid"])
        # Another spec under the name is refused.
        with self.assertRaises(ShoalError) as e:
            self.c.submit(job(name, self.queue, gpus=2))
        self.assertEqual((e.exception.status, e.exception.code), (409, 6))
        self.assertEqual(self.c.get(name)["metadata"]["uid"], rec["metadata"]["uid"])
        names = [j["metadata"]["name"] for j in self.c.list(queue=self.queue, page_size=1)]
        self.assertIn(name, names)
        self.assertEqual(len(names), len(set(names)), "pages overlap")
        pending = [j["metadata"]["name"] for j in self.c.list(queue=self.queue, phase="Pending")]
        self.assertIn(name, pending)

    def test_dry_run_stores_nothing(self):
        name = self.name()
        rec = self.c.submit(job(name, self.queue), dry_run=True)
        self.assertEqual(rec["metadata"]["name"], name)
        with self.assertRaises(ShoalError) as e:
            self.c.get(name)
        self.assertEqual((e.exception.status, e.exception.code), (404, 5))

    def test_follow_until_cancelled(self):
        name = self.name()
        self.c.submit(job(name, self.queue))
        phases = []
        cancelled = threading.Event()

        def cancel_when_followed():
            # Cancel once follow has reported the first phase (and so watches).
            deadline = time.time() + 30
            while not phases and time.time() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)
            self.c.cancel(name)
            cancelled.set()

        t = threading.Thread(target=cancel_when_followed)
        t.start()
        for p in self.c.follow(name):
            phases.append(p)
        t.join()
        self.assertTrue(cancelled.is_set())
        self.assertEqual(phases[0], "Pending")
        self.assertEqual(phases[-1], "Cancelled")
        self.assertIn(phases[-1], TERMINAL_PHASES)
        self.assertEqual(self.c.get(name)["status"]["phase"], "Cancelled")
        # Following a finished job yields its phase and ends at once.
        self.assertEqual(list(self.c.follow(name)), ["Cancelled"])

    def test_watch_reports_the_submit(self):
        name = self.name()
        rev = int(self.c._call("GET", "/v1/jobs", query={"options.limit": 1})["meta"]["revision"])
        self.c.submit(job(name, self.queue))
        w = self.c.watch(name=name, revision=rev)
        ev = next(w)
        w.close()
        self.assertEqual((ev.type, ev.record["metadata"]["name"]), ("ADDED", name))
        self.assertGreater(ev.revision, rev)

    @unittest.skipUnless(os.environ.get("SHOAL_TEST_TOKEN") and os.environ.get("SHOAL_TEST_TOKEN_USER"),
                         "needs SHOAL_TEST_TOKEN, an OIDC ID token the hub accepts, and SHOAL_TEST_TOKEN_USER, its user")
    def test_bearer_token(self):
        tc = Client(os.environ["SHOAL_REST_URL"], ca_file=os.environ["SHOAL_CA_FILE"], token=os.environ["SHOAL_TEST_TOKEN"])
        who = tc.whoami()
        self.assertEqual((who["user"], who["method"]), (os.environ["SHOAL_TEST_TOKEN_USER"], "oidc"))
        rec = tc.submit(job(self.name(), self.queue))
        self.assertEqual(rec["status"]["owner"], os.environ["SHOAL_TEST_TOKEN_USER"])
        self.assertEqual(tc.cancel(rec["metadata"]["name"])["status"]["phase"], "Cancelled")
        with self.assertRaises(ShoalError) as e:
            Client(os.environ["SHOAL_REST_URL"], ca_file=os.environ["SHOAL_CA_FILE"], token="not-a-jwt").whoami()
        self.assertEqual((e.exception.status, e.exception.code), (401, 16))

    def test_refusals(self):
        anon = Client(os.environ["SHOAL_REST_URL"], ca_file=os.environ["SHOAL_CA_FILE"])
        with self.assertRaises(ShoalError) as e:
            anon.list()
        self.assertEqual((e.exception.status, e.exception.code), (401, 16))
        with self.assertRaises(ShoalError) as e:
            self.c.submit(job(self.name(), "no-such-queue-" + uuid.uuid4().hex[:6]))
        self.assertIn(e.exception.status, (400, 403, 404))
        with self.assertRaises(ShoalError) as e:
            self.c.get("py-missing-" + uuid.uuid4().hex[:6])
        self.assertEqual(e.exception.status, 404)
        with self.assertRaises(ValueError):
            Client("http://insecure.example")
        # A checkpoint of a job that never ran: refused, with the reason.
        pending = self.c.submit(job(self.name(), self.queue))
        with self.assertRaises(ShoalError) as e:
            self.c.report_checkpoint(pending["metadata"]["name"], 10, "s3://ckpt/py/10")
        self.assertEqual(e.exception.code, 9)  # FailedPrecondition
        self.assertIn("has not run yet", str(e.exception))
        with self.assertRaises(ShoalError) as e:
            self.c.report_checkpoint(pending["metadata"]["name"], -1, "relative")
        self.assertEqual((e.exception.status, e.exception.code), (400, 3))


if __name__ == "__main__":
    unittest.main()
