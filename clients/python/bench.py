"""Measures how many IDs/s one Python process takes from idalloc's gRPC
port with idalloc_client, one call at a time, and prints one JSON line:

    python3 bench.py localhost:9090 test_business next 1 10
    python3 bench.py localhost:9090 test_business next 1000 10
    python3 bench.py localhost:9090 test_business ranges 100000 10
    python3 bench.py localhost:9090 test_business stream 100000 10

The arguments: target, tag, call (next: Next with count IDs a call;
ranges: NextRanges of count, counting the IDs the ranges hold; stream:
StreamRanges in batches of count, counting every ID it yields), count,
seconds, and a token when alloc_auth is on. The figures of
docs/performance.md's gRPC section were taken with it.
"""

import json
import sys
import time

from idalloc_client import Client

target, tag, call, count, seconds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
token = sys.argv[6] if len(sys.argv) > 6 else None

with Client(target, token=token) as c:
    ids = calls = 0
    start = time.monotonic()
    end = start + seconds
    if call == "next":
        while time.monotonic() < end:
            ids += len(c.next(tag, count))
            calls += 1
    elif call == "ranges":
        while time.monotonic() < end:
            ids += sum(last - first + 1 for first, last in c.ranges(tag, count))
            calls += 1
    elif call == "stream":
        for _ in c.stream(tag, batch=count):
            ids += 1
            if ids % 65536 == 0 and time.monotonic() >= end:
                break
        calls = 1
    else:
        sys.exit(f"bench: call {call!r}: want next, ranges or stream")
    elapsed = time.monotonic() - start
print(json.dumps({"call": call, "count": count, "seconds": round(elapsed, 3), "calls": calls,
                  "ids": ids, "ids_per_s": round(ids / elapsed), "calls_per_s": round(calls / elapsed)}))
