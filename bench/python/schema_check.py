"""schema_check.py: the documents that cross process boundaries (attngate_stats output, comparison
shards, verify results, the baseline tables) held to their JSON Schema (2020-12) by the jsonschema
package (Debian's python3-jsonschema, or `pip install jsonschema`). The C++ side uses valijson
(verify/include/attngate/verify/schema_check.hpp).

  problems = check_schema(doc, schema)   # [] when doc follows schema
"""


def _validator(schema):
    try:
        import jsonschema  # imported here: tools that never check a document run without it
    except ImportError as e:
        raise SystemExit("schema_check: the jsonschema package is needed to check a document against its schema "
                         "(apt install python3-jsonschema, or pip install jsonschema)") from e
    return jsonschema.Draft202012Validator(schema)


def _path(where, steps):
    return where + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)


def check_schema(doc, schema, where="$"):
    """Problems with `doc` against `schema`, one line each ("$.rows[0]: 'cells' is a required
    property"): wrong values first, then missing properties, each in document order; empty when it
    follows it."""
    errors = sorted(_validator(schema).iter_errors(doc),
                    key=lambda e: (e.validator == "required", [str(s) for s in e.absolute_path]))
    return [f"{_path(where, e.absolute_path)}: {e.message}" for e in errors]
