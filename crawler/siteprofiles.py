"""Site and book profiles: readable TOML/JSON files that say where to start and which links matter."""
from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from crawler.urls import host_key

PROFILE_DIR = Path(__file__).with_name("profiles")


class ProfileError(ValueError):
    """A profile file is missing, unreadable or names something that does not exist."""


@dataclass
class SiteProfile:
    """How to crawl one news site (or one book, for the fiction spider)."""

    name: str
    start_urls: list[str] = field(default_factory=list)
    hosts: set[str] = field(default_factory=set)
    article_links: list[re.Pattern] = field(default_factory=list)
    list_links: list[re.Pattern] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    feeds: list[str] = field(default_factory=list)
    body: str | None = None
    raw: dict = field(default_factory=dict)

    @property
    def site(self) -> str:
        """Site name stored with each page: the profile's `site` key, else its name."""
        return self.raw.get("site") or self.name

    @property
    def auto(self) -> bool:
        """True when the profile gives no link rules, so pages are classified by shape."""
        return not self.article_links

    def is_article(self, url: str) -> bool:
        """URL matches one of the article patterns."""
        return any(p.search(url) for p in self.article_links)

    def is_list(self, url: str) -> bool:
        """URL matches one of the list patterns (or is a start page)."""
        return url in self.start_urls or any(p.search(url) for p in self.list_links)

    def hint(self) -> dict:
        """The JSON-able part of the profile handed to the extractor (body -> body_selector)."""
        hint = {k: v for k, v in self.raw.items() if isinstance(v, (str, int, float, bool, list))}
        if self.body:
            hint.setdefault("body_selector", self.body)
        return hint


def _compile(patterns: list[str], where: str) -> list[re.Pattern]:
    """Compile regexes, naming the profile when one is invalid."""
    out = []
    for pattern in patterns:
        try:
            out.append(re.compile(pattern))
        except re.error as exc:
            raise ProfileError(f"{where}: bad regular expression {pattern!r}: {exc}") from exc
    return out


def profile_from_dict(raw: dict, where: str = "profile") -> SiteProfile:
    """Build a SiteProfile from one [[site]] or [[book]] table."""
    name = raw.get("name") or where
    start = list(raw.get("start_urls") or ([raw["toc"]] if raw.get("toc") else []))
    if not start:
        raise ProfileError(f"{where}: profile {name!r} has no start_urls (or toc)")
    for url in start:
        if urlsplit(url).scheme not in ("http", "https"):
            raise ProfileError(f"{where}: profile {name!r}: not an http(s) URL: {url!r}")
    hosts = {host_key("http://" + h) for h in raw.get("hosts", [])} or {host_key(u) for u in start}
    return SiteProfile(
        name=name, start_urls=start, hosts=hosts,
        article_links=_compile(raw.get("article_links") or raw.get("chapter_links") or [], where),
        list_links=_compile(raw.get("list_links", []), where),
        sitemaps=list(raw.get("sitemaps", [])), feeds=list(raw.get("feeds", [])),
        body=raw.get("body"), raw=dict(raw))


def load_file(path: str | Path, key: str) -> list[SiteProfile]:
    """Profiles under `key` ("site" or "book") of a .toml or .json file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except OSError as exc:
        raise ProfileError(f"cannot read profile file {path}: {exc}") from exc
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"cannot parse profile file {path}: {exc}") from exc
    tables = data.get(key, []) if isinstance(data, dict) else data
    if not isinstance(tables, list):
        raise ProfileError(f"{path}: expected a list of [[{key}]] tables")
    return [profile_from_dict(t, f"{path}[{i}]") for i, t in enumerate(tables)]


def load_profiles(key: str, files: list[str] | None = None, names: list[str] | None = None) -> list[SiteProfile]:
    """Profiles from the bundled files (news.toml for "site", fiction.toml for "book") or given files."""
    default = PROFILE_DIR / ("news.toml" if key == "site" else "fiction.toml")
    profiles = [p for f in (files or [str(default)]) for p in load_file(f, key)]
    if names:
        known = {p.name: p for p in profiles}
        missing = [n for n in names if n not in known]
        if missing:
            label = "book" if key == "book" else "profile"
            raise ProfileError(f"unknown {label} {', '.join(map(repr, missing))}; known: {', '.join(sorted(known))}, all")
        profiles = [known[n] for n in names]
    return profiles
