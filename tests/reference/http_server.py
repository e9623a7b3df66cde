#!/usr/bin/python3
"""A local HTTP server for the download tests: the files of one folder, served with the faults a
real server shows. Binds 127.0.0.1 on a free port and prints "port N" on stdout once listening.
Each request is appended to REQUEST_LOG as "<path and query> <Range header or ->" (one line, flushed
before the answer), so a test can count what a run asked for. Exits by itself after --lifetime
seconds, whatever happens to the test that started it.

Usage: http_server.py FOLDER REQUEST_LOG [--lifetime 120]

Paths (NAME: a file of FOLDER):
  /files/NAME         the file; a "Range: bytes=N-" request gets 206 and the rest from byte N
  /norange/NAME       the file, whole (200), whatever Range says
  /truncated/NAME     Content-Length of the whole file, half of it sent, then the connection closed
  /slow/NAME          the first request for it sends half the file and then stalls (up to 60 s,
                      a client to kill meanwhile); later ones are /files/NAME
  /slow-norange/NAME  the same, but later ones are /norange/NAME
  /stall/NAME         headers and 1 KiB, then nothing (up to 60 s)
  /html/NAME          200 with an HTML page (a sign-in or error page served in place of a file)
  /empty/NAME         200 with an empty body (Content-Length: 0)
  /cut/NAME           200 without Content-Length: half the file, then the connection closed
  anything else       404
A query string (?...) is ignored: the same file under another URL. NAME is percent-decoded
("a%20b.pth" is the file "a b.pth").
"""
import argparse
import os
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
SLOW_SEEN = set()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: the request log is the record
        pass

    def do_GET(self):
        rng = self.headers.get("Range")
        with LOCK:
            with open(self.server.request_log, "a") as log:
                log.write("%s %s\n" % (self.path, rng or "-"))
        route = self.path.split("?", 1)[0]  # a query names another cache entry, the same file
        m = re.fullmatch(r"/(files|norange|truncated|slow|slow-norange|stall|html|empty|cut)/"
                         r"([A-Za-z0-9._~%-]+)", route)
        path = m and os.path.join(self.server.folder, urllib.parse.unquote(m.group(2)))
        if not m or not os.path.isfile(path):
            body = b"not found\n"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            return
        with open(path, "rb") as f:
            data = f.read()
        kind = m.group(1)
        if kind in ("slow", "slow-norange"):
            with LOCK:
                first = self.path not in SLOW_SEEN
                SLOW_SEEN.add(self.path)
            if first:
                return self.send_then_stall(data, len(data) // 2)
            kind = "files" if kind == "slow" else "norange"
        if kind == "stall":
            return self.send_then_stall(data, 1024)
        if kind in ("html", "empty", "cut"):
            return self.send_wrong_body(kind, data)
        if kind == "truncated":
            self.send_headers(200, len(data))
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        start = 0
        r = re.fullmatch(r"bytes=(\d+)-", rng or "")
        if kind == "files" and r:
            start = int(r.group(1))
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()
                return
            self.send_headers(206, len(data) - start,
                              "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_headers(200, len(data))
        self.wfile.write(data[start:])

    def send_headers(self, code, length, content_range=None):
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        if content_range:
            self.send_header("Content-Range", content_range)
        self.send_header("Connection", "close")
        self.end_headers()

    def send_wrong_body(self, kind, data):
        self.send_response(200)
        if kind == "html":
            body = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body></body></html>\n"
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
        elif kind == "empty":
            body = b""
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", "0")
        else:  # cut: no length announced, so only the file's own structure tells it is short
            body = data[: len(data) // 2]
            self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def send_then_stall(self, data, sent):
        self.send_headers(200, len(data))
        self.wfile.write(data[:sent])
        self.wfile.flush()
        try:
            for _ in range(600):  # until the client goes away, or 60 s
                time.sleep(0.1)
                self.wfile.write(b"")
        except OSError:
            pass
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("request_log")
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.folder = a.folder
    server.request_log = a.request_log
    open(a.request_log, "w").close()
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    print("port %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
