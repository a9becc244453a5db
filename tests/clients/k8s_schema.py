"""Validation of a Kubernetes object against its CRD, as the API server
does with `kubectl apply --validate=strict`: the CRD's openAPIV3Schema as
JSON Schema with unknown fields rejected (additionalProperties false
wherever the schema lists properties and does not preserve unknown
fields), and every x-kubernetes-validations CEL rule on the object's
nodes evaluated with cel-python."""

import copy

import celpy
import jsonschema
import yaml


def load_crds(paths):
    """{(group/version, kind): openAPIV3Schema} of every CRD in the files."""
    out = {}
    for path in paths:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                spec = doc["spec"]
                for v in spec["versions"]:
                    schema = v.get("schema", {}).get("openAPIV3Schema")
                    if schema:
                        out[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = schema
    return out


def strict(schema):
    """The schema as JSON Schema: unknown fields rejected, nullable honoured."""
    s = copy.deepcopy(schema)

    def walk(n):
        if not isinstance(n, dict):
            return
        if n.get("nullable") and "type" in n:
            n["type"] = [n["type"], "null"]
        if "properties" in n and "additionalProperties" not in n and not n.get("x-kubernetes-preserve-unknown-fields"):
            n["additionalProperties"] = False
        for k in ("properties", "patternProperties"):
            for c in n.get(k, {}).values():
                walk(c)
        for k in ("items", "additionalProperties", "not"):
            walk(n.get(k))
        for k in ("allOf", "anyOf", "oneOf"):
            for c in n.get(k, []):
                walk(c)

    walk(s)
    # apiVersion, kind and metadata are the API server's.
    props = s.setdefault("properties", {})
    props["metadata"] = {"type": "object"}
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    return s


CEL_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
                "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}


def cel_value(data):
    """data with its keys escaped as Kubernetes does for CEL (`namespace` is
    `__namespace__`, `-` is `__dash__`, `.` is `__dot__`, `/` is `__slash__`)."""
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            e = k.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__").replace("/", "__slash__")
            out[f"__{k}__" if k in CEL_RESERVED else e] = cel_value(v)
        return out
    if isinstance(data, list):
        return [cel_value(v) for v in data]
    return data


def apply_defaults(schema, data):
    """The schema's defaults filled into data, as the API server does
    before it runs validation rules."""
    if not isinstance(schema, dict):
        return data
    if isinstance(data, dict):
        for k, sub in schema.get("properties", {}).items():
            if k not in data and isinstance(sub, dict) and "default" in sub:
                data[k] = copy.deepcopy(sub["default"])
            if k in data:
                data[k] = apply_defaults(sub, data[k])
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(schema["items"], c) for c in data]
    return data


def cel_rules(schema, data, path="self"):
    """(path, rule, message, node) of every CEL rule that applies to data."""
    out = []
    if not isinstance(schema, dict):
        return out
    for v in schema.get("x-kubernetes-validations", []):
        out.append((path, v["rule"], v.get("message", ""), data))
    if isinstance(data, dict):
        for k, c in data.items():
            sub = schema.get("properties", {}).get(k)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None:
                out += cel_rules(sub, c, f"{path}.{k}")
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for i, c in enumerate(data):
            out += cel_rules(schema["items"], c, f"{path}[{i}]")
    return out


class Validator:
    def __init__(self, crd_paths):
        self.schemas = load_crds(crd_paths)
        self.env = celpy.Environment()

    def errors(self, obj):
        """What the API server would refuse in obj: a list of messages, and
        the number of CEL rules evaluated."""
        key = (obj.get("apiVersion"), obj.get("kind"))
        if key not in self.schemas:
            return [f"no CRD for {key}"], 0
        schema = self.schemas[key]
        obj = apply_defaults(schema, copy.deepcopy(obj))
        v = jsonschema.Draft7Validator(strict(schema))
        errs = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(obj)]
        evaluated = 0
        for path, rule, message, node in cel_rules(schema, obj):
            if "oldSelf" in rule:
                continue  # transition rules apply to updates only
            try:
                prog = self.env.program(self.env.compile(rule))
                ok = prog.evaluate({"self": celpy.json_to_cel(cel_value(node))})
            except Exception as e:  # noqa: BLE001 - a rule cel-python cannot run is reported, not passed
                errs.append(f"{path}: CEL rule {rule!r} could not be evaluated: {e}")
                continue
            evaluated += 1
            if isinstance(ok, Exception) or not bool(ok):
                errs.append(f"{path}: {message or rule}")
        return errs, evaluated
