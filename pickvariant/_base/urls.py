"""Repository addresses as pickvariant records, prints and names paths after them: without the credentials they may carry.

A CI checkout's origin is often `https://gitlab-ci-token:SECRET@host/group/repo.git`, and a user may
pass `--repo http://user:TOKEN@host/…`. git needs the address as given; everything pickvariant writes
down (the catalog's source, last-install.json, reports, recipe headers, error lines, cache directory
names) gets it without the user name and password, and without a query string (where tokens go too).
"""

from __future__ import annotations

import re

from pickvariant._base.text import visible

# In running text (git's stderr): scheme://[userinfo@]host..., up to white space.
_URL = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s]*@)?(?P<rest>[^\s?#]*)(?P<query>\?[^\s#]*)?(?P<fragment>#\S*)?"
)
# git's scp-like form, [user@]host:path: the host is what stands between the last '@' and the first ':' after it.
# Patterns, not compiled: re's own cache compiles them on first use, which detect's path (an https source) never makes.
_SCP_HOST = r"[^/:@\s]+:"
_BARE_USER = r"[A-Za-z0-9._-]+"  # `git@`: a user name alone is no secret


def _scheme_end(url: str) -> int:
    """Where `scheme://` ends, or 0 when the address has no scheme (RFC 3986: a letter, then letters, digits, + . -)."""
    sep = url.find("://")
    if sep <= 0 or not url[0].isascii() or not url[0].isalpha():
        return 0
    return sep + 3 if all(c.isascii() and (c.isalnum() or c in "+.-") for c in url[:sep]) else 0


def _cut(text: str, marks: str, start: int = 0) -> int:
    """The index of the first of `marks` in text from `start`, else len(text)."""
    found = [index for index in (text.find(mark, start) for mark in marks) if index != -1]
    return min(found, default=len(text))


def _parts(url: str) -> tuple[str, str, str] | None:
    """(what comes before the credentials, the credentials with their '@', the rest) of an address, or None."""
    scheme = _scheme_end(url)
    if scheme:
        end = url.rfind("@", scheme, _cut(url, "/?#", scheme)) + 1
        if _password_with_slash(url, scheme):
            end = url.rfind("@", scheme, _cut(url, "?#", scheme)) + 1
        return url[:scheme], url[scheme : end or scheme], url[end or scheme :]
    head, sign, tail = url.rpartition("@")
    if sign and re.match(_SCP_HOST, tail):
        return "", head + sign, tail
    return None


def _password_with_slash(url: str, scheme: int) -> bool:
    """`user:pa/ss@host` (or `user:p@ss/x@host`): an '@' past the first '/', and before that '/' a ':' not followed
    by a port (digits): a password holding a '/' (unencoded, and maybe an '@' too). Everything up to the last '@' is
    then taken for credentials: a display that hides a path is wrong; one that shows a password is worse."""
    first = url[scheme : _cut(url, "/?#", scheme)]
    at = url.find("@", scheme + len(first), _cut(url, "?#", scheme))
    _, colon, port = first.partition(":")
    return at != -1 and bool(colon) and not port.isdigit()


def public_url(url: str) -> str:
    """`url` without credentials (a user name and password, a token), query string or fragment, and with every control
    character shown as an escape: every shape git accepts (a path with spaces, scp-like `user:token@host:path`, any
    scheme). Anything that is no address (a local path) is only made visible."""
    parts = _parts(url)
    if parts is None:
        return visible(url)
    before, userinfo, rest = parts
    if before:  # scheme://: the query and fragment go too (tokens are passed there)
        return visible(before + rest[: _cut(rest, "?#")])
    keep = userinfo if re.fullmatch(_BARE_USER, userinfo[:-1]) else ""
    return visible(keep + rest)


def without_credentials(text: str, address: str | None = None) -> str:
    """Every scheme:// URL inside `text` (an error message, git's stderr) without its credentials and query.

    `address`: the URL the text is about. git does not always quote it whole: for git://user:TOKEN@host
    it says "unable to look up user:TOKEN@host", so its user name and password are removed wherever they stand."""
    text = _URL.sub(lambda match: f"{match['scheme']}{match['rest']}", text)
    parts = _parts(address) if address else None
    if parts is None or not parts[1] or (not parts[0] and re.fullmatch(_BARE_USER, parts[1][:-1])):
        return text  # no credentials, or an scp-like `git@`: a user name alone is no secret
    # "user:password@", then the password alone, wherever they stand.
    userinfo = parts[1]
    _, _, password = userinfo[:-1].partition(":")
    for secret in (userinfo, password):
        if secret:
            text = text.replace(secret, "")
    return text
