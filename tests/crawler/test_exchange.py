"""The HTTP exchange kept as match evidence (crawler.items.exchange_of), from a real Scrapy response with a
real certificate (made by openssl for the test TSA): redirects, every header as sent, IP:port, the request
and the certificate's SHA-256."""
from __future__ import annotations

import hashlib
import ipaddress
import subprocess

from scrapy import Request
from scrapy.http import HtmlResponse
from twisted.internet.ssl import Certificate

from crawler.items import exchange_of
from tests.tsa_fixture import tsa_pki  # noqa: F401


def test_exchange_keeps_redirects_headers_address_request_and_certificate(tsa_pki):
    pem = (tsa_pki / "tsa.pem").read_bytes()
    der = subprocess.run(["openssl", "x509", "-outform", "DER"], input=pem, capture_output=True, check=True).stdout
    request = Request("https://p.example/read/9/102.html", headers={"User-Agent": "zhdedup-test"},
                      meta={"redirect_urls": ["http://p.example/r/2", "https://p.example/r/2"],
                            "redirect_reasons": [301, 302]})
    body = "<html><body>滚滚长江东逝水</body></html>".encode("gbk")
    response = HtmlResponse(request.url, status=200, body=body, request=request, protocol="HTTP/1.1",
                            headers=[(b"Content-Type", b"text/html; charset=gbk"), (b"Set-Cookie", b"a=1"),
                                     (b"Set-Cookie", b"b=2")],
                            ip_address=ipaddress.ip_address("127.0.0.1"), certificate=Certificate.loadPEM(pem))
    ex = exchange_of(response)
    assert ex["final_url"] == request.url and ex["redirect_urls"] == ["http://p.example/r/2", "https://p.example/r/2"]
    assert ex["redirect_statuses"] == [301, 302] and ex["status"] == 200 and ex["protocol"] == "HTTP/1.1"
    assert ["Set-Cookie", "a=1"] in ex["headers"] and ["Set-Cookie", "b=2"] in ex["headers"]   # every value
    assert ex["ip_address"] == "127.0.0.1" and ex["port"] == 443
    assert ex["body_sha256"] == hashlib.sha256(body).hexdigest() and ex["body_length"] == len(body)
    assert ex["request"]["method"] == "GET" and ["User-Agent", "zhdedup-test"] in ex["request"]["headers"]
    assert ex["certificate"]["sha256"] == hashlib.sha256(der).hexdigest() and "Test TSA" in ex["certificate"]["subject"]
