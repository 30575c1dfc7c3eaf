"""Slow request bodies against a real `tessera server`: a body trickled a
byte at a time must not keep its request slot for ever. After a grace
period a body must have come at a floor rate on average
(TESSERA_API_BODY_MIN_RATE, TESSERA_API_BODY_GRACE), else the request
fails with 400 RequestTimeout (S3's code for a socket not read from or
written to in time) and its slot goes to the next request.
"""

import http.client
import os
import socket
import threading
import time
import unittest
import urllib.parse

from s3util import client, signed_headers
from tessera_server import TesseraServer


def wait_for_free_slots(test, u, bound=20):
    """Waits until the server at `u` (a split URL) serves no S3 request:
    tessera_s3_requests_active is 0. Metrics requests are answered before
    the S3 layer and take no slot."""
    deadline = time.monotonic() + bound
    while True:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        conn.request("GET", "/tessera/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        active = [l for l in text.splitlines() if l.startswith("tessera_s3_requests_active")]
        if active and float(active[0].split()[-1]) == 0:
            return
        test.assertLess(time.monotonic(), deadline, active)
        time.sleep(0.1)


class TrickledBodies(unittest.TestCase):
    def test_trickled_bodies_lose_their_slots(self):
        server = TesseraServer(env={
            "TESSERA_API_REQUESTS_MAX": "2",
            "TESSERA_API_REQUESTS_DEADLINE": "20s",
            "TESSERA_API_BODY_MIN_RATE": "10000",
            "TESSERA_API_BODY_GRACE": "500ms",
        }).start()
        stop = threading.Event()
        answers = {}
        try:
            s3 = client(server.endpoint)
            s3.create_bucket(Bucket="slow")
            s3.put_object(Bucket="slow", Key="k", Body=b"served")
            u = urllib.parse.urlsplit(server.endpoint)

            def trickle(i):
                path = f"/slow/trickled-{i}"
                # Signed for an empty payload: the request fails on time
                # long before its body could be checked.
                headers = signed_headers(server.endpoint, "PUT", path, body=b"")
                headers.pop("Content-Length", None)
                lines = [f"PUT {path} HTTP/1.1", f"Host: {u.netloc}", "Content-Length: 1000000"]
                lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "host"]
                with socket.create_connection((u.hostname, u.port), timeout=30) as s:
                    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
                    started = time.monotonic()
                    s.settimeout(0.1)
                    data = b""
                    # One byte every 100 ms (10 B/s, far under the floor)
                    # until the server answers.
                    while not stop.is_set() and time.monotonic() - started < 20:
                        try:
                            s.sendall(b"x")
                        except OSError:
                            break
                        try:
                            chunk = s.recv(65536)
                            if not chunk:
                                break
                            data += chunk
                            if b"</Error>" in data:
                                break
                        except socket.timeout:
                            pass
                    answers[i] = (time.monotonic() - started, data.split(b"\r\n")[0], data)

            # Three trickled bodies for a bound of two requests.
            threads = [threading.Thread(target=trickle, args=(i,)) for i in range(3)]
            for t in threads:
                t.start()
            time.sleep(0.2)
            started = time.monotonic()
            self.assertEqual(s3.get_object(Bucket="slow", Key="k")["Body"].read(), b"served")
            waited = time.monotonic() - started
            for t in threads:
                t.join(30)
            self.assertEqual(len(answers), 3, answers)
            for i, (elapsed, status, data) in answers.items():
                self.assertIn(b" 400 ", status, data)
                self.assertIn(b"<Code>RequestTimeout</Code>", data)
                # Grace 0.5 s; the 20 s idle limit would be far later.
                self.assertLess(elapsed, 5, (i, elapsed))
            # The GET waited only for a trickled body to lose its slot.
            self.assertLess(waited, 5)
            print(f"\nGET served after {waited:.2f} s; trickled bodies refused after "
                  f"{sorted(round(a[0], 2) for a in answers.values())} s")
            for i in range(3):
                with self.assertRaises(Exception):
                    s3.head_object(Bucket="slow", Key=f"trickled-{i}")
        finally:
            stop.set()
            server.cleanup()


class NonReadingClients(unittest.TestCase):
    """A GET client that stops reading (its receive window at zero) must not
    keep its slot and the response's buffers: after TESSERA_API_SEND_TIMEOUT
    without progress the connection is closed and the slot freed."""

    def test_clients_that_stop_reading_lose_their_slots(self):
        server = TesseraServer(env={
            "TESSERA_API_REQUESTS_MAX": "2",
            "TESSERA_API_REQUESTS_DEADLINE": "30s",
            "TESSERA_API_SEND_TIMEOUT": "1s",
            "TESSERA_PROMETHEUS_AUTH_TYPE": "public",
        }).start()
        socks = []
        try:
            s3 = client(server.endpoint)
            s3.create_bucket(Bucket="stuck")
            big = b"z" * (32 * 1024 * 1024)
            s3.put_object(Bucket="stuck", Key="big", Body=big)
            s3.put_object(Bucket="stuck", Key="small", Body=b"served")
            u = urllib.parse.urlsplit(server.endpoint)
            for _ in range(3):
                headers = signed_headers(server.endpoint, "GET", "/stuck/big")
                lines = ["GET /stuck/big HTTP/1.1", f"Host: {u.netloc}"]
                lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "host"]
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.connect((u.hostname, u.port))
                s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
                socks.append(s)
            time.sleep(0.3)
            started = time.monotonic()
            self.assertEqual(s3.get_object(Bucket="stuck", Key="small")["Body"].read(), b"served")
            waited = time.monotonic() - started
            # Every slot comes free while the clients still read nothing.
            wait_for_free_slots(self, u)
            # Each stalled connection was closed: what it holds ends before
            # the object's end.
            for s in socks:
                s.settimeout(10)
                got = 0
                while True:
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        break
                    got += len(chunk)
                self.assertLess(got, len(big))
            self.assertLess(waited, 10)
            print(f"\nGET served after {waited:.2f} s with 3 non-reading clients and a bound of 2")
        finally:
            for s in socks:
                s.close()
            server.cleanup()


class PartialH2Prefaces(unittest.TestCase):
    """Connections that send part of the HTTP/2 preface and stall are waited
    for without polling (the sniffer wakes only when bytes arrive) and
    closed at the header timeout; meanwhile signed requests are served."""

    def test_partial_prefaces_are_closed_at_the_header_timeout(self):
        server = TesseraServer(env={"TESSERA_READ_HEADER_TIMEOUT": "2s"}).start()
        u = urllib.parse.urlsplit(server.endpoint)
        socks = []
        try:
            s3 = client(server.endpoint)
            s3.create_bucket(Bucket="prefaces")
            s3.put_object(Bucket="prefaces", Key="small", Body=b"served")
            with open(f"/proc/{server.proc.pid}/stat") as f:
                before = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
            opened = time.monotonic()
            for i in range(200):
                s = socket.create_connection((u.hostname, u.port))
                # 1 to 23 bytes of the 24-byte preface.
                s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[: 1 + i % 23])
                socks.append(s)
            started = time.monotonic()
            self.assertEqual(s3.get_object(Bucket="prefaces", Key="small")["Body"].read(), b"served")
            waited = time.monotonic() - started
            closed_by = []
            for s in socks:
                s.settimeout(15)
                try:
                    self.assertEqual(s.recv(1), b"", "the server answered a partial preface")
                except ConnectionResetError:
                    # Closed with the preface unread: a reset, not a FIN.
                    pass
                closed_by.append(time.monotonic() - opened)
            with open(f"/proc/{server.proc.pid}/stat") as f:
                after = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
            cpu = (after - before) / os.sysconf("SC_CLK_TCK")
            self.assertLess(waited, 1.0)
            # Closed at the header timeout (2 s), not before.
            self.assertGreater(min(closed_by), 1.5)
            self.assertLess(max(closed_by), 10)
            # The sniffer sleeps until bytes come: 200 connections waiting
            # 2 s cost the server next to no CPU time (a 5 ms poll would
            # wake 80,000 times). A bound on the process's own CPU time,
            # ten times what it takes here, not on wall time.
            self.assertLess(cpu, 0.1)
            print(f"\nGET served in {waited:.2f} s beside 200 partial prefaces; all closed "
                  f"{min(closed_by):.1f}-{max(closed_by):.1f} s after opening; server CPU {cpu:.2f} s")
        finally:
            for s in socks:
                s.close()
            server.cleanup()


class H2StreamsWithoutWindow(unittest.TestCase):
    """An HTTP/2 client that answers pings and reads its socket but grants
    its streams no flow-control window stalls no socket, so the connection's
    send deadline does not see it. Each stream's response has its own
    deadline: after TESSERA_API_SEND_TIMEOUT without a frame taken, the
    response (its slot, its reader, its buffers) is dropped, and the stream
    is reset if the client ever opens its window."""

    def test_streams_without_window_lose_their_slots(self):
        import h2.config
        import h2.connection
        import h2.events
        import h2.settings

        server = TesseraServer(env={
            "TESSERA_API_REQUESTS_MAX": "2",
            "TESSERA_API_REQUESTS_DEADLINE": "30s",
            "TESSERA_API_SEND_TIMEOUT": "1s",
            "TESSERA_PROMETHEUS_AUTH_TYPE": "public",
        }).start()
        u = urllib.parse.urlsplit(server.endpoint)
        sock = None
        try:
            s3 = client(server.endpoint)
            s3.create_bucket(Bucket="windowless")
            big = b"w" * (8 * 1024 * 1024)
            s3.put_object(Bucket="windowless", Key="big", Body=big)
            s3.put_object(Bucket="windowless", Key="small", Body=b"served")

            # One connection, three streams (one more than the bound), a
            # window of zero for every stream.
            conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
            conn.initiate_connection()
            conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
            sock = socket.create_connection((u.hostname, u.port))
            streams = []
            for _ in range(3):
                signed = signed_headers(server.endpoint, "GET", "/windowless/big")
                headers = [(":method", "GET"), (":path", "/windowless/big"),
                           (":scheme", "http"), (":authority", u.netloc)]
                headers += [(k.lower(), v) for k, v in signed.items() if k.lower() != "host"]
                sid = conn.get_next_available_stream_id()
                conn.send_headers(sid, headers, end_stream=True)
                streams.append(sid)
            sock.sendall(conn.data_to_send())

            events = {sid: [] for sid in streams}
            received = {sid: 0 for sid in streams}
            stop = threading.Event()

            def pump():
                # Reads the socket and answers pings and settings; never
                # acknowledges data, so no window opens.
                sock.settimeout(0.2)
                while not stop.is_set():
                    try:
                        data = sock.recv(65536)
                    except socket.timeout:
                        continue
                    except OSError:
                        return
                    if not data:
                        return
                    for e in conn.receive_data(data):
                        sid = getattr(e, "stream_id", None)
                        if sid in events:
                            events[sid].append(type(e).__name__)
                        if isinstance(e, h2.events.DataReceived):
                            received[e.stream_id] += len(e.data)
                    out = conn.data_to_send()
                    if out:
                        sock.sendall(out)

            pumper = threading.Thread(target=pump, daemon=True)
            pumper.start()
            time.sleep(0.3)
            started = time.monotonic()
            self.assertEqual(s3.get_object(Bucket="windowless", Key="small")["Body"].read(), b"served")
            waited = time.monotonic() - started
            # Every slot comes free while the streams still have no window.
            wait_for_free_slots(self, u)
            for sid in streams:
                self.assertEqual(received[sid], 0)
                self.assertIn("ResponseReceived", events[sid])
            # Opening the windows now gets each stream reset, not the object.
            stop.set()
            pumper.join()
            for sid in streams:
                conn.increment_flow_control_window(len(big), stream_id=sid)
            conn.increment_flow_control_window(len(big))
            sock.sendall(conn.data_to_send())
            stop.clear()
            pumper = threading.Thread(target=pump, daemon=True)
            pumper.start()
            deadline = time.monotonic() + 10
            while not all("StreamReset" in events[sid] for sid in streams):
                self.assertLess(time.monotonic(), deadline, events)
                time.sleep(0.05)
            stop.set()
            pumper.join()
            for sid in streams:
                self.assertLess(received[sid], len(big))
            self.assertLess(waited, 10)
            print(f"\nGET served after {waited:.2f} s with 3 windowless HTTP/2 streams and a bound of 2")
        finally:
            if sock is not None:
                sock.close()
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
