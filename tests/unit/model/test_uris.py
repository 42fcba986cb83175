"""Published resource URIs map back exactly to (server, upstream URI), whatever the upstream URI holds,
and template expressions survive publishing so a client's expansion maps back too."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from foldgate.model.uris import origin_template, origin_uri, publish_template, publish_uri

servers = st.from_regex(r"[A-Za-z0-9_-]{1,24}", fullmatch=True)
# Any text, lone surrogates included (JSON can carry them), plus URI-ish hostile fragments.
hostile = st.one_of(
    st.text(),
    st.lists(st.sampled_from([*"/%:{}?#&=+ \\\n\x00é😀", "%2F", "%25", "../", "{x}", "\ud800"])).map("".join),
)


@given(servers, hostile)
def test_uri_round_trips(server: str, uri: str) -> None:
    published = publish_uri(server, uri)
    assert origin_uri(published) == (server, uri)
    # The upstream URI is one opaque segment: nothing in it can forge another server's prefix.
    assert published.count("/") == 3


@given(servers, hostile)
def test_template_round_trips(server: str, template: str) -> None:
    assert origin_template(publish_template(server, template)) == (server, template)


@given(servers, st.text(min_size=1))
def test_two_servers_never_share_a_published_uri(server: str, uri: str) -> None:
    assert publish_uri(server, uri) != publish_uri(server + "x", uri)


def test_expanded_template_maps_back_to_the_upstream_uri() -> None:
    published = publish_template("everything", "test://template/{id}/data")
    assert "{id}" in published  # clients can still expand it
    expanded = published.replace("{id}", "123")
    assert origin_uri(expanded) == ("everything", "test://template/123/data")


@pytest.mark.parametrize(
    "uri",
    [
        "",
        "test://static-text",
        "foldgate:/x/y",
        "foldgate://",
        "foldgate://no-slash",
        "foldgate://bad server/x",
        "foldgate://a.b/x",
        "foldgate://../x",
        123,
    ],
)
def test_foreign_uris_are_nobodys(uri: object) -> None:
    assert origin_uri(uri) is None  # type: ignore[arg-type]
