"""EvidenceStamper reads its settings in from_crawler and switches itself off, saying why (NotConfigured)."""
from __future__ import annotations

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from crawler import settings as project
from crawler.stamps import EvidenceStamper
from tests.tsa_fixture import tsa_pki  # noqa: F401


@pytest.mark.parametrize(("given", "why"), [
    ({}, "ZHDEDUP_TSA_URL is not set"),
    ({"ZHDEDUP_TSA_URL": "http://127.0.0.1:9/tsa"}, "ZHDEDUP_TSA_CA is not"),
    ({"ZHDEDUP_TSA_URL": "http://127.0.0.1:9/tsa", "ZHDEDUP_TSA_CA": "/nonexistent/ca.pem"}, "cannot read the TSA CA"),
    ({"ZHDEDUP_TSA_URL": "http://127.0.0.1:9/tsa", "ZHDEDUP_INFRINGEMENT": False}, "ZHDEDUP_INFRINGEMENT is off"),
])
def test_off_with_the_reason(given, why):
    with pytest.raises(NotConfigured, match=why):
        EvidenceStamper.from_crawler(get_crawler(settings_dict={"ZHDEDUP_TSA_URL": "", "ZHDEDUP_TSA_CA": "", **given}))


def test_on_with_url_and_ca_and_the_declared_defaults(tsa_pki):
    assert project.EXTENSIONS["crawler.stamps.EvidenceStamper"] and project.ZHDEDUP_TSA_BACKOFF_MAX == 300
    crawler = get_crawler(settings_dict={"ZHDEDUP_TSA_URL": "http://127.0.0.1:9/tsa",
                                         "ZHDEDUP_TSA_CA": str(tsa_pki / "ca.pem"), "ZHDEDUP_TSA_INTERVAL": 60})
    stamper = EvidenceStamper.from_crawler(crawler)
    assert stamper.interval == 60 and stamper.client.url.endswith("/tsa") and len(stamper.client.roots) == 1
