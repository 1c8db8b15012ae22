"""schema_check.py: the subset of JSON Schema (2020-12) that attngate's schemas use, for the Python
tools that read documents crossing process boundaries (attngate_stats output, comparison shards,
verify results): type, const, minimum, enum, required, properties, items, oneOf and $ref into
#/$defs. Any other keyword is ignored. The C++ twin: verify/include/attngate/verify/schema_check.hpp.

  problems = check_schema(doc, schema)   # [] when doc follows schema
"""

_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
               "integer": int, "number": (int, float)}


def _is_type(value, name):
    # bool is an int in Python; in JSON true is no number.
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _JSON_TYPES[name])


def check_schema(doc, schema, root=None, where="$"):
    """Problems with `doc` against `schema`, one line each ("$.rows[0]: 'cells' missing"); empty
    when it follows it. `root` holds the $defs that $ref points into (default: `schema`)."""
    root = schema if root is None else root
    if "$ref" in schema:
        return check_schema(doc, root["$defs"][schema["$ref"].rsplit("/", 1)[-1]], root, where)
    errs = []
    if "oneOf" in schema and sum(not check_schema(doc, alt, root, where) for alt in schema["oneOf"]) != 1:
        errs.append(f"{where}: matches none or several of {len(schema['oneOf'])} alternatives")
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(doc, t) for t in types):
            return errs + [f"{where}: {doc!r} is not of type {'/'.join(types)}"]
    if "const" in schema and doc != schema["const"]:
        errs.append(f"{where}: {doc!r}, expected {schema['const']!r}")
    if "minimum" in schema and _is_type(doc, "number") and doc < schema["minimum"]:
        errs.append(f"{where}: {doc!r} is below {schema['minimum']}")
    if "enum" in schema and doc not in schema["enum"]:
        errs.append(f"{where}: {doc!r} is not one of {schema['enum']}")
    if isinstance(doc, dict):
        errs += [f"{where}: '{k}' missing" for k in schema.get("required", []) if k not in doc]
        for k, sub in schema.get("properties", {}).items():
            if k in doc:
                errs += check_schema(doc[k], sub, root, f"{where}.{k}")
    if isinstance(doc, list) and "items" in schema:
        for i, item in enumerate(doc):
            errs += check_schema(item, schema["items"], root, f"{where}[{i}]")
    return errs
