#!/usr/bin/env python3
"""tcp_proxy.py - a TCP proxy a test controls, to cut a client from its
server (tests/e2e/ha_chaos.sh: one broker replica from PostgreSQL).

    tcp_proxy.py --upstream HOST:PORT --listeners N --control DIR

Listens on N ports of 127.0.0.1 (printed as `listening I PORT`, I from 1)
and forwards every connection to the upstream.  Each listener's mode is
the first word of DIR/mode-I (no file: pass), read every 50 ms:

    pass       forward both ways (what was held in blackhole flows on)
    drop       close every connection of the listener now, and each new
               one as soon as it is accepted: the client sees the server go
    blackhole  forward nothing either way and close nothing: the client's
               statements and the server's answers wait in the sockets, as
               behind a partition that drops packets; new connections are
               accepted and held the same way

DIR/stats gets one line per mode change: `I MODE connections=N` (the
connections the listener had open then), and one per connection that was
held by a blackhole and closed after the heal: `I held-closed
client_bytes=N`, what its client had sent that reached the server only
after the heal.
"""
import argparse
import os
import selectors
import socket
import sys
import time


class Pair:
    def __init__(self, idx, client, upstream):
        self.idx = idx
        self.client = client
        self.upstream = upstream
        self.registered = False
        self.closed = False
        self.held = False  # blackholed, then healed
        self.held_bytes = 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--listeners", type=int, default=1)
    ap.add_argument("--control", required=True)
    a = ap.parse_args()
    host, port = a.upstream.rsplit(":", 1)
    up = (host, int(port))
    sel = selectors.DefaultSelector()
    listeners = {}
    for i in range(1, a.listeners + 1):
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", 0))
        ls.listen(128)
        ls.setblocking(False)
        listeners[i] = ls
        sel.register(ls, selectors.EVENT_READ, ("listen", i))
        print("listening %d %d" % (i, ls.getsockname()[1]), flush=True)
    modes = {i: "pass" for i in listeners}
    pairs = []

    def read_mode(i):
        try:
            with open(os.path.join(a.control, "mode-%d" % i)) as f:
                w = f.read().split()
        except OSError:
            return "pass"
        return w[0] if w and w[0] in ("pass", "drop", "blackhole") else "pass"

    def close_pair(p):
        if p.closed:
            return
        p.closed = True
        if p.held:
            with open(os.path.join(a.control, "stats"), "a") as f:
                f.write("%d held-closed client_bytes=%d\n" % (p.idx, p.held_bytes))
        if p.registered:
            sel.unregister(p.client)
            sel.unregister(p.upstream)
            p.registered = False
        for s in (p.client, p.upstream):
            try:
                s.close()
            except OSError:
                pass

    def arm(p):
        if p.closed or p.registered:
            return
        sel.register(p.client, selectors.EVENT_READ, ("data", p, p.upstream))
        sel.register(p.upstream, selectors.EVENT_READ, ("data", p, p.client))
        p.registered = True

    def disarm(p):
        if p.registered:
            sel.unregister(p.client)
            sel.unregister(p.upstream)
            p.registered = False

    def apply(i, mode):
        mine = [p for p in pairs if p.idx == i and not p.closed]
        with open(os.path.join(a.control, "stats"), "a") as f:
            f.write("%d %s connections=%d\n" % (i, mode, len(mine)))
        for p in mine:
            if mode == "drop":
                close_pair(p)
            elif mode == "blackhole":
                disarm(p)
            else:
                if not p.registered:
                    p.held = True
                arm(p)

    last = 0.0
    while True:
        now = time.monotonic()
        if now - last >= 0.05:
            last = now
            for i in listeners:
                m = read_mode(i)
                if m != modes[i]:
                    modes[i] = m
                    apply(i, m)
            pairs[:] = [p for p in pairs if not p.closed]
        for key, _ in sel.select(timeout=0.05):
            kind = key.data[0]
            if kind == "listen":
                i = key.data[1]
                try:
                    c, _addr = key.fileobj.accept()
                except OSError:
                    continue
                if modes[i] == "drop":
                    c.close()
                    continue
                try:
                    u = socket.create_connection(up, timeout=5)
                except OSError:
                    c.close()
                    continue
                # a peer that stops reading (a frozen broker) costs its own
                # connection, not the proxy's loop
                c.settimeout(2.0)
                u.settimeout(2.0)
                p = Pair(i, c, u)
                pairs.append(p)
                if modes[i] == "pass":
                    arm(p)
                continue
            _, p, other = key.data
            if p.closed or not p.registered:
                continue
            try:
                data = key.fileobj.recv(65536)
            except OSError:
                data = b""
            if not data:
                close_pair(p)
                continue
            if p.held and key.fileobj is p.client:
                p.held_bytes += len(data)
            try:
                other.sendall(data)
            except OSError:
                close_pair(p)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
