"""gRPC: every `--to grpc` export as the service config of a Python grpcio
channel, against a local grpcio server on 127.0.0.1 that answers
UNAVAILABLE a scripted number of times."""

import json
import threading
import time
from concurrent import futures

import grpc

from common import Skip, check, export, policies

METHOD = "/retrysim.Test/Call"


class Server:
    """A grpcio server whose one method fails with UNAVAILABLE while
    `fail` > 0 (counting down), then answers; it counts attempts."""

    def __init__(self):
        self.lock = threading.Lock()
        self.attempts = 0
        self.fail = 0
        self.code = grpc.StatusCode.UNAVAILABLE
        self.times = []

        def call(request, context):
            with self.lock:
                self.attempts += 1
                self.times.append(time.monotonic())
                failing = self.fail != 0
                if self.fail > 0:
                    self.fail -= 1
            if failing:
                context.abort(self.code, "scripted failure")
            return b"ok"

        handler = grpc.method_handlers_generic_handler(
            "retrysim.Test", {"Call": grpc.unary_unary_rpc_method_handler(call)}
        )
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def script(self, fail, code=grpc.StatusCode.UNAVAILABLE):
        with self.lock:
            self.attempts, self.fail, self.code, self.times = 0, fail, code, []

    def stop(self):
        self.server.stop(0)


def channel(port, config):
    return grpc.insecure_channel(
        f"127.0.0.1:{port}",
        options=[("grpc.service_config", config), ("grpc.enable_retries", 1), ("grpc.enable_http_proxy", 0)],
    )


def call(ch, timeout=None):
    stub = ch.unary_unary(METHOD)
    try:
        stub(b"x", timeout=timeout, wait_for_ready=True)
        return "OK"
    except grpc.RpcError as e:
        return e.code().name


def secs(d):
    return float(d[:-1])


def worst_waits(rp):
    """The longest total backoff of a call that uses every attempt (A6: ±20% jitter)."""
    b, total = secs(rp["initialBackoff"]), 0.0
    for _ in range(rp["maxAttempts"] - 1):
        total += min(b, secs(rp["maxBackoff"])) * 1.2
        b *= rp["backoffMultiplier"]
    return total


def run(suite):
    server = Server()
    try:
        for label, path in policies():
            text, err, _ = export(path, "grpc")
            cfg = json.loads(text)
            mc = cfg["methodConfig"][0]
            rp = mc.get("retryPolicy")

            def loads(text=text):
                # The channel accepts the config and a call goes through.
                server.script(0)
                with channel(server.port, text) as ch:
                    r = call(ch, timeout=10)
                check(r == "OK", f"a healthy call ended {r}")
                check(server.attempts == 1, f"{server.attempts} attempts for a healthy call")

            suite.case("grpc", "grpcio", f"{label}: config loads", loads)

            def attempts(text=text, rp=rp, mc=mc, err=err):
                if rp is None:
                    raise Skip("no retryPolicy (no retries, or hedging)")
                if "UNAVAILABLE" not in rp["retryableStatusCodes"]:
                    raise Skip("UNAVAILABLE not retried")
                check(isinstance(cfg.get("retryThrottling", {}).get("maxTokens", 1), int), "maxTokens must be an integer")
                deadline = secs(mc["timeout"]) if "timeout" in mc else None
                waits = worst_waits(rp)
                # grpcio ends a service-config timeout 1-2 s early: exact only with room to spare.
                exact = deadline is None or waits + 0.5 < deadline - 2.0
                for fail in (1, rp["maxAttempts"] - 1, 100):
                    server.script(fail)
                    with channel(server.port, text) as ch:
                        r = call(ch)
                    want = min(fail + 1, rp["maxAttempts"])
                    if exact:
                        check(server.attempts == want, f"fail {fail}: server saw {server.attempts} attempts, the policy allows {want}")
                        check(r == ("OK" if fail < rp["maxAttempts"] else "UNAVAILABLE"), f"fail {fail}: ended {r}")
                    else:
                        check(1 <= server.attempts <= want, f"fail {fail}: {server.attempts} attempts, at most {want}")
                    # Waits between attempts stay within the exported backoff (+ scheduling slack).
                    gaps = [b - a for a, b in zip(server.times, server.times[1:])]
                    limit = secs(rp["initialBackoff"])
                    for i, g in enumerate(gaps):
                        bound = min(limit * rp["backoffMultiplier"] ** i, secs(rp["maxBackoff"])) * 1.2 + 0.25
                        check(g <= bound, f"wait {i + 1} was {g:.3f}s, backoff allows {bound:.3f}s")
                return f"maxAttempts {rp['maxAttempts']}" + ("" if exact else ", bounded by the deadline")

            suite.case("grpc", "grpcio", f"{label}: attempts", attempts)

            def throttling(text=text, rp=rp):
                t = cfg.get("retryThrottling")
                if t is None or rp is None or "UNAVAILABLE" not in rp["retryableStatusCodes"]:
                    raise Skip("no retryThrottling")
                # A6: a failed attempt takes 1 token, a success gives back tokenRatio;
                # a retry goes out only while tokens > maxTokens / 2.
                # Without the method's timeout: grpcio ends a service-config
                # timeout 1-2 s early, so a 2 s one left a loaded machine no
                # time for the retries this case counts (the attempts case
                # checks the timeout).
                untimed = json.loads(text)
                for m in untimed["methodConfig"]:
                    m.pop("timeout", None)
                tokens, seen = float(t["maxTokens"]), []
                expected = []
                with channel(server.port, json.dumps(untimed)) as ch:
                    for _ in range(8):
                        server.script(100)
                        call(ch)
                        seen.append(server.attempts)
                        n = 0
                        while True:
                            n += 1
                            tokens = max(0.0, tokens - 1)
                            if n >= rp["maxAttempts"] or tokens <= t["maxTokens"] / 2:
                                break
                        expected.append(n)
                check(seen == expected, f"attempts per call {seen}, A6 says {expected}")
                return f"attempts per call {seen}"

            suite.case("grpc", "grpcio", f"{label}: retry throttling", throttling)

        def broken():
            # A float maxTokens (what retrysim wrote before) is refused: the test can fail.
            bad = json.dumps({"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}], "retryThrottling": {"maxTokens": 10.5, "tokenRatio": 0.1}})
            server.script(100)
            with channel(server.port, bad) as ch:
                r = call(ch, timeout=3)
            check(server.attempts <= 1 and r != "OK", f"a broken config was used: {server.attempts} attempts, {r}")
            return f"refused ({r})"

        suite.case("grpc", "grpcio", "broken config is rejected", broken)

        def immediate():
            # The immediate-retries export (no backoff) must not stall grpcio:
            # 40 calls that fail once each all finish well before their deadline.
            path = [p for l, p in policies() if l == "immediate-retries"][0]
            text, err, _ = export(path, "grpc")
            check("grpcio" in err, "the change of the 1ms backoff is named on stderr")
            cfg = json.loads(text)
            check(secs(cfg["methodConfig"][0]["retryPolicy"]["initialBackoff"]) >= 0.005, "at least 5ms")
            slow = 0
            with channel(server.port, text) as ch:
                for _ in range(40):
                    server.script(1)
                    t0 = time.monotonic()
                    r = call(ch, timeout=5)
                    if r != "OK" or time.monotonic() - t0 > 1.0:
                        slow += 1
            check(slow == 0, f"{slow} of 40 calls stalled")
            return "40 of 40 calls retried at once"

        suite.case("grpc", "grpcio", "no stall on the smallest backoff", immediate)
    finally:
        server.stop()
