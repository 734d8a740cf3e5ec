# SPDX-License-Identifier: Apache-2.0
"""python3 -m shoal: a small command line over the client, configured by
the SHOAL_* environment variables of Client.from_env.

    python3 -m shoal submit job.json     # JSON (YAML needs PyYAML: not used)
    python3 -m shoal get NAME | list [--queue Q] [--phase P] | follow NAME | cancel NAME | whoami
"""

import argparse
import json
import sys

from .client import Client, ShoalError


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m shoal", description="Shoal hub REST client (docs/rest.md)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("submit", help="submit a Job from a JSON file ('-': stdin)")
    s.add_argument("file")
    s.add_argument("--dry-run", action="store_true")
    for name in ("get", "follow", "cancel"):
        sub.add_parser(name).add_argument("name")
    ls = sub.add_parser("list")
    ls.add_argument("--queue")
    ls.add_argument("--phase")
    ls.add_argument("--cluster")
    sub.add_parser("whoami")
    a = p.parse_args(argv)
    try:
        c = Client.from_env()
        if a.cmd == "submit":
            text = sys.stdin.read() if a.file == "-" else open(a.file, encoding="utf-8").read()
            print(json.dumps(c.submit(text, dry_run=a.dry_run), indent=2))
        elif a.cmd == "get":
            print(json.dumps(c.get(a.name), indent=2))
        elif a.cmd == "list":
            for j in c.list(queue=a.queue, phase=a.phase, cluster=a.cluster):
                print(j["metadata"]["name"], j["spec"].get("queue", ""), (j.get("status") or {}).get("phase", ""))
        elif a.cmd == "follow":
            for phase in c.follow(a.name):
                print(phase, flush=True)
        elif a.cmd == "cancel":
            print((c.cancel(a.name).get("status") or {}).get("phase", ""))
        elif a.cmd == "whoami":
            print(json.dumps(c.whoami(), indent=2))
    except (ShoalError, ValueError, OSError) as e:
        print(f"shoal: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
