"""Takes IDs of a tag from idalloc's gRPC port with every call of
idalloc_client, and prints them as one JSON object:

    python3 example.py localhost:9090 test_business
    python3 example.py localhost:9090 test_business TOKEN   # alloc_auth on

The stubs must be importable (PYTHONPATH: the directory gen-stubs.sh
wrote). clients/python's Go test runs it against a live idalloc and
checks that the IDs never repeat and increase in the order printed:
next, batch, ranges, stream.
"""

import itertools
import json
import sys

from idalloc_client import Client, Error

target, tag = sys.argv[1], sys.argv[2]
token = sys.argv[3] if len(sys.argv) > 3 else None

with Client(target, token=token) as c:
    out = {
        "next": [c.next(tag)[0] for _ in range(3)],  # one ID a call
        "batch": c.next(tag, 5),  # five IDs, one call
        "ranges": c.ranges(tag, 100),  # [(first, last)], 100 IDs
        "stream": list(itertools.islice(c.stream(tag, batch=50), 120)),  # three batches, one call
        "snowflake": c.snowflake(2),
    }
    try:
        c.next("no_such_tag")
    except Error as e:  # branch on the kind, never on the words
        out["refused"] = {"code": e.code.name, "kind": e.kind, "field": e.field}
print(json.dumps(out))
