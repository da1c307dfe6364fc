#!/usr/bin/env python3
"""Writes the seed inputs of the `http` fuzz target (tools/fuzz http) into Fuzz/corpus/http.

Layout of an input (see HTTPFuzzCheck): route index, variant, then 0xFF-separated path
parameter 1, path parameter 2, query string, header lines, body. Route indexes follow the
order routes are registered (32 routes at most here; others wrap around)."""
import itertools, os

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "http")
queries = [b"", b"at=18446744073709551615", b"at=-1", b"at=1&asOf=9999-12-31T23:59:59.999Z",
           b"asOf=0001-01-01T00:00:00Z", b"asOf=1969-12-31T23:59:59Z", b"from=18446744073709551615",
           b"from=0&user=alice&types=device.registered,challenge.issued", b"includeRevoked=maybe",
           b"current=%00&view=requester", b"after=9223372036854775808&limit=0", b"limit=-1",
           b"user=&types=", b"fromScratch=1&at=2"]
headers = [b"", b"Last-Event-ID: 18446744073709551615", b"Last-Event-ID: 18446744073709551614",
           b"Last-Event-ID: -1", b"Last-Event-ID: 99999999999999999999999",
           b"Content-Type: text/plain", b"Authorization: Bearer \xff\xfe", b"Content-Length: 0",
           b"Accept: text/event-stream\nLast-Event-ID: 1"]
bodies = [b"", b"{}", b"[]", b'{"seq":18446744073709551615}', b'{"from":9223372036854775807}',
          b'{"events":[],"expectedVersion":{"":0}}', b'{"deviceId":"d","name":"Name one","via":"admin"}',
          b'{"coolingSeconds":99999999999999999999}', b"null", b'{"name":"\\u0000"}']
n = 0
for route in range(32):
    for k, (q, h, b) in enumerate(zip(itertools.cycle(queries[route % 3::3] or queries),
                                     itertools.cycle(headers), itertools.cycle(bodies))):
        if k == 4:
            break
        data = bytes([route, k & 3]) + b"alice" + b"\xff" + b"c1" + b"\xff" + q + b"\xff" + h + b"\xff" + b
        with open(os.path.join(here, f"seed-{route:02d}-{k}"), "wb") as f:
            f.write(data)
        n += 1
print(f"{n} seeds")
