"""Gateway API and Istio exports against the CRDs' OpenAPI schemas and CEL
rules (k8s_schema.py), Linkerd's ServiceProfile against its CRD and its
annotations against Linkerd's documented forms, and resilience4j's YAML
against the JSON schema of its Spring Boot keys."""

import json
import os
import re

import jsonschema
import yaml

from common import ROOT, Skip, check, export, policies
from k8s_schema import Validator

CRD_SETS = {
    "gateway-api": ("gateway-api-v1.6.1", "Gateway API v1.6.1 CRDs"),
    "istio": ("istio-1.30.3", "Istio 1.30.3 CRDs"),
}


def crd_dir():
    """Where the fetched CRDs are: $RETRYSIM_CRDS, a shared/crds folder
    beside the repository or beside one of its parent folders, or
    ~/.cache/retrysim-ci/crds."""
    parents = []
    d = os.path.dirname(ROOT)
    while d != os.path.dirname(d):
        parents.append(os.path.join(d, "shared", "crds"))
        d = os.path.dirname(d)
    for d in (os.environ.get("RETRYSIM_CRDS"), *parents, os.path.expanduser("~/.cache/retrysim-ci/crds")):
        if d and os.path.isdir(d):
            return d
    return None


def k8s_cases(suite, target, sub, client):
    base = crd_dir()
    files = []
    if base and os.path.isdir(os.path.join(base, sub)):
        files = [os.path.join(base, sub, f) for f in sorted(os.listdir(os.path.join(base, sub))) if f.endswith(".yaml")]
    if not files:
        msg = f"*** {client} not found (set RETRYSIM_CRDS to a folder with {sub}/): {target} exports NOT validated ***"
        print(msg)

        def absent():
            raise Skip(msg)

        suite.case(target, client, "CRDs present", absent)
        return
    v = Validator(files)
    for label, path in policies():
        text, _, _ = export(path, target)

        def one(text=text):
            docs = [d for d in yaml.safe_load_all(text) if d]
            total = 0
            for d in docs:
                errs, n = v.errors(d)
                total += n
                check(not errs, f"{d.get('kind')}: " + "; ".join(errs))
            return f"{len(docs)} object(s), {total} CEL rule(s)"

        suite.case(target, client, f"{label}: schema + CEL", one)

    def broken():
        # Unknown fields and broken rules are refused: the check can fail.
        if target == "gateway-api":
            bad = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "x"},
                   "spec": {"rules": [{"retry": {"attempts": 2, "retries": 1}, "timeouts": {"request": "1s", "backendRequest": "2s"}}]}}
        else:
            bad = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": {"name": "x"},
                   "spec": {"hosts": ["b"], "http": [{"retries": {"attempts": 2, "perTryTimeout": "0.5ms", "retryon": "5xx"}}]}}
        errs, _ = v.errors(bad)
        check(len(errs) >= 2, f"expected an unknown field and a rule refused, got {errs}")
        return f"{len(errs)} error(s) found"

    suite.case(target, client, "broken resource is rejected", broken)


LINKERD_HTTP = re.compile(r"^(5xx|gateway-error|[1-5][0-9]{2}(-[1-5][0-9]{2})?)(,(5xx|gateway-error|[1-5][0-9]{2}(-[1-5][0-9]{2})?))*$")
GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(h|m|s|ms|us|ns))+$")


def linkerd_cases(suite):
    base = crd_dir()
    files = []
    if base and os.path.isdir(os.path.join(base, "linkerd")):
        files = [os.path.join(base, "linkerd", f) for f in sorted(os.listdir(os.path.join(base, "linkerd"))) if f.endswith(".yaml")]
    v = Validator(files) if files else None
    for label, path in policies():
        text, _, _ = export(path, "linkerd")

        def one(text=text):
            docs = [d for d in yaml.safe_load_all(text) if d]
            notes = []
            for d in docs:
                if d["kind"] == "Service":
                    a = d["metadata"]["annotations"]
                    for k, val in a.items():
                        check(isinstance(val, str), f"annotation {k} must be a string, is {val!r}")
                    if "retry.linkerd.io/http" in a:
                        check(LINKERD_HTTP.match(a["retry.linkerd.io/http"]), f"retry.linkerd.io/http {a['retry.linkerd.io/http']!r}")
                    if "retry.linkerd.io/limit" in a:
                        check(a["retry.linkerd.io/limit"].isdigit(), "retry.linkerd.io/limit is a whole number")
                    for k in ("retry.linkerd.io/timeout", "timeout.linkerd.io/request"):
                        if k in a:
                            check(GO_DURATION.match(a[k]), f"{k} {a[k]!r} is not a duration")
                    unknown = [k for k in a if k.startswith(("retry.linkerd.io/", "timeout.linkerd.io/")) and k.split("/")[1] not in ("http", "grpc", "limit", "timeout", "request", "response", "idle")]
                    check(not unknown, f"unknown annotations {unknown}")
                elif d["kind"] == "ServiceProfile":
                    if v is None:
                        notes.append("ServiceProfile CRD absent: not validated")
                        continue
                    errs, _ = v.errors(d)
                    check(not errs, "; ".join(errs))
            return ", ".join(notes)

        suite.case("linkerd", "annotation forms" + (" + SP CRD" if v else ""), f"{label}: annotations", one)


def resilience4j_cases(suite):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "resilience4j.schema.json")) as f:
        schema = json.load(f)
    validator = jsonschema.Draft7Validator(schema)
    for label, path in policies():
        text, _, _ = export(path, "resilience4j")

        def one(text=text):
            doc = yaml.safe_load(text)
            errs = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
            check(not errs, "; ".join(errs))
            inst = next(iter(doc["resilience4j"]["retry"]["instances"].values()))
            return f"maxAttempts {inst['maxAttempts']}"

        suite.case("resilience4j", "spring-boot keys schema", f"{label}: schema", one)

    def broken():
        bad = {"resilience4j": {"retry": {"instances": {"x": {"maxAttempts": 0, "waitDurration": "1s"}}}}}
        errs = list(validator.iter_errors(bad))
        check(len(errs) >= 2, f"expected 2 errors, got {[e.message for e in errs]}")
        return f"{len(errs)} error(s) found"

    suite.case("resilience4j", "spring-boot keys schema", "broken config is rejected", broken)


def run(suite):
    for target, (sub, client) in CRD_SETS.items():
        k8s_cases(suite, target, sub, client)
    linkerd_cases(suite)
    resilience4j_cases(suite)
