"""A small traced system for `retrysim import-traces` and `run --compare-traces`.

Three processes on 127.0.0.1, each with its own OpenTelemetry SDK tracer
provider and the OTLP/JSON file exporter (one ExportTraceServiceRequest a
line), so the trace files are what a real deployment writes:

- loadgen: an open-loop (Poisson) client; one traced CLIENT span per request
  to `api`, no retries, a 2 s timeout.
- api: at most 8 requests in service at once (a semaphore; the rest wait),
  a random self time, then one call to `backend` with retries: 3 attempts,
  a per-try timeout, retry on 503 and on timeout, exponential backoff with
  full jitter. Each attempt is its own CLIENT span; retries carry
  `http.request.resend_count`. It answers 503 when the last attempt was a
  503, 504 after a timeout.
- backend: at most 4 requests in service, lognormal service times, and an
  injected 503 on arrival (before a worker is taken) with a fixed share.

The SERVER span starts once a worker has been taken, as in thread-pool
servers whose instrumentation runs in the worker: time spent waiting for a
worker is outside it. Usage:

    python tests/support/traced_system.py --out DIR [--seconds 45] [--rate 40] [--seed 1]

writes DIR/loadgen.jsonl, DIR/api.jsonl, DIR/backend.jsonl and
DIR/truth.json (the parameters used) and stops by itself.
"""

import argparse
import http.client
import http.server
import json
import math
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

# The system as built: what the import should find.
TRUTH = {
    "api": {"workers": 8, "self_time_uniform_ms": [2.0, 6.0]},
    "backend": {"workers": 4, "service_time_lognormal": {"median_ms": 32.0, "sigma": 0.6}, "p503": 0.08},
    "api->backend": {"max_attempts": 3, "per_try_timeout_ms": 120, "backoff": "exponential base 20ms, full jitter",
                     "retry_on": ["503", "timeout"]},
    "loadgen->api": {"max_attempts": 1, "timeout_ms": 2000},
}


def provider(service, path):
    p = TracerProvider(resource=Resource.create({"service.name": service}))
    p.add_span_processor(BatchSpanProcessor(FileSpanExporter(path), max_export_batch_size=256,
                                            schedule_delay_millis=500))
    return p


def attempt_span(tracer, port, path, timeout_s, resend):
    """One HTTP GET as a CLIENT span; returns the outcome: a status code or 'timeout'/'connect_error'."""
    attrs = {"http.request.method": "GET", "server.address": "127.0.0.1", "server.port": port,
             "url.full": f"http://127.0.0.1:{port}{path}"}
    if resend:
        attrs["http.request.resend_count"] = resend
    with tracer.start_as_current_span("GET", kind=SpanKind.CLIENT, attributes=attrs) as span:
        headers = {}
        propagate.inject(headers)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
        try:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            resp.read()
            span.set_attribute("http.response.status_code", resp.status)
            if resp.status >= 400:
                span.set_attribute("error.type", str(resp.status))
                span.set_status(Status(StatusCode.ERROR))
            return resp.status
        except (socket.timeout, TimeoutError):
            span.set_attribute("error.type", "timeout")
            span.set_status(Status(StatusCode.ERROR, "per-try timeout"))
            return "timeout"
        except OSError as e:
            span.set_attribute("error.type", type(e).__name__)
            span.set_status(Status(StatusCode.ERROR))
            return "connect_error"
        finally:
            conn.close()


def serve(name, port, downstream_port, seed):
    tp = provider(name, os.environ["TRACE_FILE"])
    tracer = tp.get_tracer("retrysim.traced_system")
    truth = TRUTH[name]
    workers = threading.BoundedSemaphore(truth["workers"])
    rng = random.Random(seed)
    lock = threading.Lock()

    def draw(f):
        with lock:
            return f(rng)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args):
            pass

        def answer(self, status):
            try:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:
                pass  # the caller gave up (per-try timeout)

        def do_GET(self):
            ctx = propagate.extract(dict(self.headers))
            attrs = {"http.request.method": "GET", "url.path": self.path, "http.route": self.path}
            p503 = truth.get("p503", 0.0)
            if p503 and draw(lambda r: r.random()) < p503:
                # Injected on arrival, before a worker is taken.
                with tracer.start_as_current_span("GET " + self.path, context=ctx, kind=SpanKind.SERVER,
                                                  attributes=attrs) as span:
                    span.set_attribute("http.response.status_code", 503)
                    span.set_status(Status(StatusCode.ERROR))
                    self.answer(503)
                return
            with workers:
                with tracer.start_as_current_span("GET " + self.path, context=ctx, kind=SpanKind.SERVER,
                                                  attributes=attrs) as span:
                    status = 200
                    if name == "backend":
                        st = truth["service_time_lognormal"]
                        time.sleep(draw(lambda r: r.lognormvariate(math.log(st["median_ms"] / 1000), st["sigma"])))
                    else:
                        lo, hi = truth["self_time_uniform_ms"]
                        time.sleep(draw(lambda r: r.uniform(lo, hi)) / 1000)
                        status = call_backend(tracer, downstream_port, draw)
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                    self.answer(status)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.request_queue_size = 256

    def stop(*_):
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()
    tp.shutdown()


def call_backend(tracer, port, draw):
    policy = TRUTH["api->backend"]
    last = None
    for attempt in range(policy["max_attempts"]):
        if attempt > 0:
            limit = 0.020 * 2 ** (attempt - 1)
            time.sleep(draw(lambda r: r.uniform(0, limit)))  # full jitter
        last = attempt_span(tracer, port, "/work", policy["per_try_timeout_ms"] / 1000, attempt)
        if last == 200:
            return 200
        if last not in (503, "timeout"):
            break
    return 504 if last == "timeout" else 503 if last == 503 else 502


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, deadline):
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"service on port {port} did not start")


def loadgen(out, api_port, seconds, rate, seed):
    tp = provider("loadgen", os.path.join(out, "loadgen.jsonl"))
    tracer = tp.get_tracer("retrysim.traced_system")
    rng = random.Random(seed)
    start = time.monotonic()
    t = 0.0
    threads = []
    while True:
        t += rng.expovariate(rate)
        if t >= seconds:
            break
        delay = start + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        th = threading.Thread(target=attempt_span, args=(tracer, api_port, "/checkout", 2.0, 0), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join(5)
    tp.shutdown()
    return len(threads)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=45)
    ap.add_argument("--rate", type=float, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--downstream", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        serve(a.serve, a.port, a.downstream, a.seed)
        return
    os.makedirs(a.out, exist_ok=True)
    ports = {"api": free_port(), "backend": free_port()}
    procs = []
    try:
        for i, (name, down) in enumerate([("backend", 0), ("api", ports["backend"])]):
            env = dict(os.environ, TRACE_FILE=os.path.join(a.out, f"{name}.jsonl"))
            procs.append(subprocess.Popen([sys.executable, __file__, "--out", a.out, "--serve", name,
                                           "--port", str(ports[name]), "--downstream", str(down),
                                           "--seed", str(a.seed * 100 + i)], env=env))
        for name in ports:
            wait_port(ports[name], time.time() + 30)
        n = loadgen(a.out, ports["api"], a.seconds, a.rate, a.seed)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
    with open(os.path.join(a.out, "truth.json"), "w") as f:
        json.dump(dict(TRUTH, requests=n, seconds=a.seconds, rate=a.rate), f, indent=1)
    print(f"{n} requests; traces in {a.out}")


if __name__ == "__main__":
    main()
