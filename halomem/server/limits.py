"""The server's body-size default (413, enforced by server.edge). Rate limits live beside the
request pipeline that charges them (halomem.ratelimit)."""

DEFAULT_MAX_BODY = 16 * 1024 * 1024
