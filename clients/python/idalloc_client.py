"""A small Python client of idalloc's gRPC front end (docs/api.md §14).

It wraps the stubs generated from proto/idalloc/v1/idalloc.proto, which
must be importable as idalloc.v1 (clients/python/gen-stubs.sh writes them;
docs/clients.md says how):

    from idalloc_client import Client

    with Client("localhost:9090") as c:
        c.next("test_business")            # [1]
        c.next("test_business", 100)       # 100 IDs, one call
        c.ranges("test_business", 10000)   # [(first, last), ...]
        for id in c.stream("test_business", batch=10000):
            ...                            # StreamRanges: no call per batch
        c.snowflake()                      # [snowflake ID]

A token (a per-tag token with alloc_auth on, or the admin token for the
admin calls) travels as "authorization: Bearer <token>". A refusal raises
Error, whose kind is the server's (docs/api.md §2): branch on it, never on
the message.
"""

import queue

import grpc

from idalloc.v1 import idalloc_pb2 as pb
from idalloc.v1 import idalloc_pb2_grpc as rpc

__all__ = ["Client", "Error"]


class Error(Exception):
    """A call idalloc refused, or that did not reach it.

    code is the grpc.StatusCode; kind the server's kind ("unknown_tag",
    "unavailable"...; "" when the status carries none, as when the server
    was not reached); field the request field at fault, if any;
    retry_after the seconds to wait before retrying (on another instance
    if there is one), or None when retrying does not help.
    """

    def __init__(self, code, message, kind="", field="", retry_after=None):
        super().__init__(f"{code.name}: {message}" + (f" (kind {kind})" if kind else ""))
        self.code = code
        self.message = message
        self.kind = kind
        self.field = field
        self.retry_after = retry_after


class Client:
    """A connection to one idalloc instance's gRPC port (grpc_addr).

    target is "host:port"; token, if given, is sent with every call;
    timeout bounds each unary call, in seconds. The channel is cleartext
    HTTP/2, as idalloc serves it. Safe for use from several threads, as a
    gRPC channel is.
    """

    def __init__(self, target, token=None, timeout=2.0):
        self._channel = grpc.insecure_channel(target)
        self._stub = rpc.IDAllocatorStub(self._channel)
        self._metadata = (("authorization", "Bearer " + token),) if token else ()
        self._timeout = timeout

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, request):
        try:
            return method(request, timeout=self._timeout, metadata=self._metadata)
        except grpc.RpcError as e:
            raise _error(e) from None

    def next(self, tag, count=1):
        """count IDs of tag, in one call (Next, as GET /alloc), as ints.

        A dated tag whose IDs are text answers them through next_text.
        """
        r = self._call(self._stub.Next, pb.NextRequest(app_tag=tag, count=count))
        if not r.ids and r.ids_str:
            raise ValueError(f"tag {tag!r} answers text IDs: use next_text")
        return list(r.ids)

    def next_text(self, tag, count=1):
        """count IDs of tag as text (a dated tag's ids_str; others' digits)."""
        r = self._call(self._stub.Next, pb.NextRequest(app_tag=tag, count=count))
        return list(r.ids_str) if r.ids_str else [str(i) for i in r.ids]

    def ranges(self, tag, count):
        """count IDs of tag as (first, last) runs, both included
        (NextRanges, as GET /alloc?as=ranges): sequential and fixed_length
        tags only."""
        r = self._call(self._stub.NextRanges, pb.NextRangesRequest(app_tag=tag, count=count))
        return [(x.first, x.last) for x in r.ranges]

    def stream(self, tag, batch=1000):
        """Yields IDs of tag without end, from ranges of batch IDs that one
        StreamRanges call supplies: the next batch is asked for as soon as
        one arrives, so one is in flight while the caller uses the other.
        IDs left unused when the caller stops are skipped, never repeated.
        Sequential and fixed_length tags only."""
        asks = queue.SimpleQueue()
        asks.put(pb.StreamRangesRequest(app_tag=tag, count=batch))
        # A later message repeats the tag and count: count 0 would too.
        more = pb.StreamRangesRequest(count=batch)
        call = self._stub.StreamRanges(iter(asks.get, None), metadata=self._metadata)
        try:
            for r in call:
                asks.put(more)
                for x in r.ranges:
                    yield from range(x.first, x.last + 1)
        except grpc.RpcError as e:
            raise _error(e) from None
        finally:
            asks.put(None)
            call.cancel()

    def snowflake(self, count=1):
        """count snowflake IDs (Snowflake, as GET /snowflake)."""
        r = self._call(self._stub.Snowflake, pb.SnowflakeRequest(count=count))
        return list(r.ids)

    def decode_snowflake(self, id):
        """A snowflake ID's parts (DecodeSnowflake, as GET /snowflake/{id}):
        a dict of time, timestamp_ms, worker_id and sequence."""
        r = self._call(self._stub.DecodeSnowflake, pb.DecodeSnowflakeRequest(id=id))
        return {"time": r.time, "timestamp_ms": r.timestamp_ms, "worker_id": r.worker_id, "sequence": r.sequence}


# The refusal's details (docs/api.md §14) are a google.rpc.Status in the
# trailer grpc-status-details-bin. Its few fields are read off the wire
# here rather than from googleapis-common-protos, one package fewer.
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def _error(e):
    kind, field, retry_after = "", "", None
    for key, value in e.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        for num, detail in _fields(value):
            if num != 3:  # Status.details: Any
                continue
            any_ = dict(_fields(detail))
            url, body = any_.get(1, b"").decode(), any_.get(2, b"")
            if url == _ERROR_INFO:
                for n, v in _fields(body):
                    if n == 1:  # reason: the kind
                        kind = v.decode()
                    elif n == 3:  # metadata entry
                        entry = dict(_fields(v))
                        if entry.get(1) == b"field":
                            field = entry.get(2, b"").decode()
            elif url == _RETRY_INFO:
                delay = dict(_fields(dict(_fields(body)).get(1, b"")))  # Duration
                retry_after = delay.get(1, 0) + delay.get(2, 0) / 1e9
    return Error(e.code(), e.details() or "", kind, field, retry_after)


def _fields(b):
    """Yields a protobuf message's (field number, value): an int for a
    varint, bytes for the other wire types."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        wire = key & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            v, i = b[i : i + n], i + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            v, i = b[i : i + n], i + n
        else:
            raise ValueError(f"protobuf wire type {wire}")
        yield key >> 3, v


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7
