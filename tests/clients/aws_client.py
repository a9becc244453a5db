"""AWS: every `--to aws` export as AWS_CONFIG_FILE of botocore, against a
local endpoint on 127.0.0.1 that answers 503 (or a throttling 400 with
x-amz-retry-after) and records when each attempt arrived."""

import configparser
import http.server
import json
import os
import subprocess
import sys
import threading
import time

from common import tmpdir, ROOT, Skip, check, export, policies

DRIVER = r"""
import json, sys, time
import botocore, botocore.session
from botocore.config import Config
s = botocore.session.get_session()
c = s.create_client("dynamodb", region_name="us-east-1", endpoint_url=sys.argv[1],
                    aws_access_key_id="x", aws_secret_access_key="x",
                    config=Config(connect_timeout=2, read_timeout=5))
err = None
try:
    c.list_tables()
except Exception as e:
    err = type(e).__name__
print(json.dumps({"version": botocore.__version__, "retries": c.meta.config.retries, "error": err}))
"""


class Endpoint(http.server.BaseHTTPRequestHandler):
    times = []
    status = 503
    body = b'{"__type":"ServiceUnavailable","message":"scripted"}'
    headers_extra = {}

    def do_POST(self):
        Endpoint.times.append(time.monotonic())
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(Endpoint.status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        for k, v in Endpoint.headers_extra.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(Endpoint.body)))
        self.end_headers()
        self.wfile.write(Endpoint.body)

    def log_message(self, *a):
        pass


def run(suite, python):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    tmp = tmpdir("retrysim-aws-")

    def drive(config, status=503, body=None, headers=None):
        Endpoint.times, Endpoint.status = [], status
        Endpoint.body = body or b'{"__type":"ServiceUnavailable","message":"scripted"}'
        Endpoint.headers_extra = headers or {}
        path = os.path.join(tmp, "config")
        with open(path, "w") as f:
            f.write(config)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_CONFIG_FILE=path, AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "none"))
        r = subprocess.run([python, "-c", DRIVER, url], capture_output=True, text=True, env=env, timeout=120)
        check(r.returncode == 0, r.stderr)
        out = json.loads(r.stdout)
        check(out["version"] == "1.44.8", f"botocore {out['version']}")
        gaps = [b - a for a, b in zip(Endpoint.times, Endpoint.times[1:])]
        return out, len(Endpoint.times), gaps

    try:
        for label, path in policies():
            text, err, _ = export(path, "aws")
            ini = configparser.ConfigParser()
            ini.read_string(text)
            mode, attempts = ini["default"]["retry_mode"], int(ini["default"]["max_attempts"])

            def loads(text=text, mode=mode, attempts=attempts):
                out, n, gaps = drive(text)
                check(out["retries"]["mode"] == mode, f"retry_mode {out['retries']}")
                check(out["retries"]["total_max_attempts"] == attempts, f"max_attempts {out['retries']}")
                check(n == attempts, f"the endpoint saw {n} attempts, the config allows {attempts}")
                # botocore >= 1.44: rand * min(0.05 * 2^i, 20) after a transient error.
                for i, g in enumerate(gaps):
                    check(g <= 0.05 * 2 ** i + 0.15, f"wait {i + 1} was {g:.3f}s, more than 50ms * 2^{i} allows")
                return f"{mode}, {n} attempts, waits " + ", ".join(f"{g * 1000:.0f}ms" for g in gaps)

            suite.case("aws", "botocore 1.44.8", f"{label}: mode, attempts, waits", loads)

            if "behaviour of botocore >= 1.44" in text.lower() or "botocore >= 1.44.0" in text:

                def retry_after(text=text, attempts=attempts, mode=mode):
                    # x-amz-retry-after 300 (ms) with a throttling answer: waits of at least 0.3s
                    # (max(t, min(300ms, t + 5s))), at most the 1s throttling base * 2^i + 5s.
                    body = b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"slow down"}'
                    out, n, gaps = drive(text, status=400, body=body, headers={"x-amz-retry-after": "300"})
                    check(n == attempts, f"{n} attempts")
                    for i, g in enumerate(gaps):
                        # In adaptive mode the rate limiter, on after the first throttle, adds its own wait.
                        top = float("inf") if mode == "adaptive" else 1.0 * 2**i + 0.15
                        check(0.29 <= g <= top, f"wait {i + 1} was {g:.3f}s")
                    return "waits " + ", ".join(f"{g * 1000:.0f}ms" for g in gaps)

                suite.case("aws", "botocore 1.44.8", f"{label}: x-amz-retry-after honoured", retry_after)

        def broken():
            out, n, _ = drive("[default]\nretry_mode = standard\nmax_attempts = 2\n")
            check(n == 2, "the endpoint counts attempts")
            try:
                drive("[default]\nretry_mode = sometimes\n")
            except AssertionError as e:
                return "an unknown retry_mode is refused"
            raise AssertionError("botocore accepted retry_mode = sometimes")

        suite.case("aws", "botocore 1.44.8", "broken config is rejected", broken)
    finally:
        srv.shutdown()
