"""Repository addresses as pickvariant records, prints and names paths after them: without the credentials they may carry.

A CI checkout's origin is often `https://gitlab-ci-token:SECRET@host/group/repo.git`, and a user may
pass `--repo http://user:TOKEN@host/…`. git needs the address as given; everything pickvariant writes
down (the catalog's source, last-install.json, reports, recipe headers, error lines, cache directory
names) gets it without the user name and password, and without a query string (where tokens go too).
"""

from __future__ import annotations

import re

# scheme://[userinfo@]host...: the userinfo is everything up to the last '@' before the path.
_URL = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s]*@)?(?P<rest>[^\s?#]*)(?P<query>\?[^\s#]*)?(?P<fragment>#\S*)?"
)


def public_url(url: str) -> str:
    """`url` without user name, password, query string or fragment; anything that is no scheme:// URL as it is."""
    match = _URL.fullmatch(url)
    if match is None:
        return url
    return f"{match['scheme']}{match['rest']}"


def without_credentials(text: str, address: str | None = None) -> str:
    """Every scheme:// URL inside `text` (an error message, git's stderr) without its credentials and query.

    `address`: the URL the text is about. git does not always quote it whole: for git://user:TOKEN@host
    it says "unable to look up user:TOKEN@host", so its user name and password are removed wherever they stand."""
    text = _URL.sub(lambda match: f"{match['scheme']}{match['rest']}", text)
    match = _URL.fullmatch(address) if address else None
    if match is not None and match["userinfo"]:
        # "user:password@", then the password alone; a bare user name ("git@") is left, as it is no secret.
        userinfo = match["userinfo"]
        _, _, password = userinfo[:-1].partition(":")
        for secret in (userinfo, password):
            if secret:
                text = text.replace(secret, "")
    return text
