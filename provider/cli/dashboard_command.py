"""taskhub-pg dashboard: the hub in a browser (the `web` extra), and
`taskhub-pg dashboard hash-password`, which writes a users file's line."""

from __future__ import annotations

import getpass
import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from provider.cli.hubs import require_hub
from provider.cli.options import USAGE, Schema, Url, console, database_url, fail
from provider.dashboard.access import AccessPolicy, is_loopback, networks
from provider.dashboard.hub import STATEMENT_TIMEOUT_MS
from provider.dashboard.passwords import ROLES, VIEWER, Account, AccountError, hash_line
from provider.dashboard.passwords import read_accounts as parse_accounts
from provider.dashboard.paths import checked_root_path
from provider.dashboard.tokens import configured_secret
from provider.host_headers import LOOPBACK_HOSTS

EXTRA_MISSING = "the dashboard verb needs the web extra: pip install 'taskhub-pg[web]'"
WEB_PACKAGES = ("starlette", "jinja2", "uvicorn")
USERS_VARIABLE = "TASKHUB_DASHBOARD_USERS"  # account lines, as in a users file
USERS_FILE_VARIABLE = "TASKHUB_DASHBOARD_USERS_FILE"
SECRET_VARIABLE = "TASKHUB_DASHBOARD_SECRET"  # the tokens' secret, shared by replicas
SECRET_FILE_VARIABLE = "TASKHUB_DASHBOARD_SECRET_FILE"
NO_AUTH = (
    "--host {host} is reachable from other machines and no sign-in is configured:"
    f" give --users-file (or {USERS_VARIABLE}), or --proxy-auth-header with"
    " --forwarded-allow-ips; --insecure-no-auth serves it to anyone"
)
INSECURE = (
    "--insecure-no-auth: anyone who can reach %s:%d reads every instance's inputs,"
    " outputs and errors%s"
)

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

log = logging.getLogger("provider.dashboard")

# The group's --help is the callback's docstring; the root's list, this line.
dashboard_cli = typer.Typer(
    short_help="Serve the hub's dashboard (hash-password: write a user's line)."
)


def register(app: typer.Typer) -> None:
    app.add_typer(dashboard_cli, name="dashboard")


@dashboard_cli.callback(invoke_without_command=True)
def dashboard(
    ctx: typer.Context,
    port: Annotated[
        int,
        typer.Option(min=1, max=65535, envvar="TASKHUB_DASHBOARD_PORT", help="port to serve on"),
    ] = 8080,
    host: Annotated[
        str,
        typer.Option(
            envvar="TASKHUB_DASHBOARD_HOST",
            help="address to listen on (this machine only, by default)",
        ),
    ] = "127.0.0.1",
    url: Url = None,
    schema: Schema = "public",
    allow_actions: Annotated[
        bool,
        typer.Option(
            help="offer requeue, release-lease, cancel, delete and prune to operators"
            " (each asks first, and is logged)"
        ),
    ] = False,
    users_file: Annotated[
        Path | None,
        typer.Option(
            envvar=USERS_FILE_VARIABLE,
            help="sign in with HTTP basic auth as the users of this file, one"
            " NAME:ROLE:HASH line each (taskhub-pg dashboard hash-password writes one);"
            f" {USERS_VARIABLE} may hold such lines too",
        ),
    ] = None,
    proxy_auth_header: Annotated[
        str | None,
        typer.Option(
            help="the header an authenticating proxy names its user in (e.g."
            " X-Forwarded-User), believed only from --forwarded-allow-ips"
        ),
    ] = None,
    forwarded_allow_ips: Annotated[
        list[str] | None,
        typer.Option(
            help="the proxies (addresses or networks, comma-separated) whose"
            " --proxy-auth-header and X-Forwarded-For are believed; none by default"
        ),
    ] = None,
    proxy_operator: Annotated[
        list[str] | None,
        typer.Option(help="a user named by the proxy who may act (repeat); others only read"),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="a name the browser reaches the dashboard by, besides localhost,"
            " 127.0.0.1, ::1 and --host (repeat); other Host headers get a 400"
        ),
    ] = None,
    insecure_no_auth: Annotated[
        bool,
        typer.Option(help="serve a non-loopback --host without sign-in (logs a warning)"),
    ] = False,
    root_path: Annotated[
        str,
        typer.Option(
            help="serve every page under this sub-path (like /taskhub), for a proxy"
            " that passes the path on as it came"
        ),
    ] = "",
    secret_file: Annotated[
        Path | None,
        typer.Option(
            envvar=SECRET_FILE_VARIABLE,
            help="sign the forms' tokens and the actions' confirmations with the secret"
            f" this file holds (at least 32 characters; or {SECRET_VARIABLE}): replicas"
            " given the same accept each other's; else a secret of this process",
        ),
    ] = None,
    statement_timeout_ms: Annotated[
        int,
        typer.Option(min=100, help="cut off a page's statement after this long (a 503 says so)"),
    ] = STATEMENT_TIMEOUT_MS,
) -> None:
    """Serve the hub's dashboard: overview, instances, one instance's
    history, dead letters; read-only unless --allow-actions. Users sign in
    with HTTP basic auth (--users-file) or through an authenticating proxy
    (--proxy-auth-header); on 127.0.0.1 without either, nobody is asked.
    `taskhub-pg dashboard hash-password NAME` writes a user's line. Ctrl-C
    stops it (exit 0). Exit 2 on a bad option, without the web extra, or on
    a non-loopback --host without sign-in; exit 3 when --schema holds no hub."""
    if ctx.invoked_subcommand is not None:
        return
    policy = _policy(
        host,
        users_file,
        proxy_auth_header,
        forwarded_allow_ips or [],
        proxy_operator or [],
        allowed_host or [],
    )
    if policy.open and not is_loopback(host) and not insecure_no_auth:
        fail(USAGE, NO_AUTH.format(host=host))
    secret = _secret(secret_file)
    try:
        prefix = checked_root_path(root_path)
    except ValueError as error:
        fail(USAGE, f"--root-path: {error}")
    target = database_url(url)
    try:
        import uvicorn

        from provider.dashboard.app import dashboard_app as web_app
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in WEB_PACKAGES:
            raise
        fail(USAGE, EXTRA_MISSING)
    require_hub(target, schema)
    mode = "actions on" if allow_actions else "read-only"
    console.print(
        f"serving http://{host}:{port}{prefix}/ for schema {schema} ({mode}; {_sign_in(policy)})",
        highlight=False,
    )
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    if insecure_no_auth:
        actions = ", and takes the actions" if allow_actions else ""
        log.warning(INSECURE, host, port, actions)
    app = web_app(
        target,
        schema,
        allow_actions=allow_actions,
        access=policy,
        root_path=prefix,
        secret=secret,
        statement_timeout_ms=statement_timeout_ms,
    )
    # proxy_headers off: uvicorn would believe X-Forwarded-For from 127.0.0.1;
    # the guard believes it from --forwarded-allow-ips only.
    uvicorn.run(
        app, host=host, port=port, log_level="warning", proxy_headers=False, server_header=False
    )


@dashboard_cli.command("hash-password")
def hash_password(
    user: Annotated[str, typer.Argument(help="the user's name (no ':', no space)")],
    role: Annotated[
        str, typer.Option(help=f"{' or '.join(ROLES)}: operators may take the actions")
    ] = VIEWER,
) -> None:
    """Print a users file's line for USER, the password hashed (scrypt, a
    salt of its own). The password is asked twice without echo on a
    terminal, else read as one line of standard input; it is never printed."""
    if role not in ROLES:
        fail(USAGE, f"--role is {' or '.join(ROLES)}, not {role!r}")
    if sys.stdin.isatty():
        password = getpass.getpass(f"password for {user}: ")
        if getpass.getpass("again: ") != password:
            fail(USAGE, "the passwords differ: nothing written")
    else:
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    try:
        line = hash_line(user, role, password)
    except AccountError as error:
        fail(USAGE, str(error))
    sys.stdout.write(line + "\n")


def _policy(
    host: str,
    users_file: Path | None,
    proxy_header: str | None,
    forwarded_allow: list[str],
    proxy_operators: list[str],
    allowed_hosts: list[str],
) -> AccessPolicy:
    """The options as an AccessPolicy; exit 2 on one that cannot be used."""
    try:
        trusted = networks(forwarded_allow)
    except ValueError as error:
        fail(USAGE, f"--forwarded-allow-ips: {error}")
    if proxy_header is not None:
        if not proxy_header.strip() or not all(
            ch.isascii() and (ch.isalnum() or ch == "-") for ch in proxy_header
        ):
            fail(USAGE, f"--proxy-auth-header {proxy_header[:40]!r} is no header name")
        if not trusted:
            fail(USAGE, "--proxy-auth-header needs --forwarded-allow-ips: the proxies to believe")
    elif proxy_operators:
        fail(USAGE, "--proxy-operator needs --proxy-auth-header")
    hosts = set(LOOPBACK_HOSTS) | {name.strip().lower().strip("[]") for name in allowed_hosts}
    if host not in ("0.0.0.0", "::", ""):
        hosts.add(host.lower().strip("[]"))  # the address it listens on names itself
    return AccessPolicy(
        accounts=_accounts(users_file),
        proxy_header=proxy_header.lower() if proxy_header else None,
        proxy_operators=frozenset(proxy_operators),
        forwarded_allow=trusted,
        allowed_hosts=frozenset(hosts),
    )


def _accounts(users_file: Path | None) -> dict[str, Account]:
    """The accounts of --users-file and of TASKHUB_DASHBOARD_USERS. An error
    names the file (or variable) and the line, never what the line holds."""
    sources = []
    if users_file is not None:
        try:
            sources.append((str(users_file), users_file.read_text(encoding="utf-8")))
        except OSError as error:
            fail(USAGE, f"--users-file {str(users_file)!r}: {error.strerror}")
        except UnicodeDecodeError:
            fail(USAGE, f"--users-file {str(users_file)!r}: not UTF-8 text")
        if users_file.stat().st_mode & 0o077:
            log.warning("%s can be read by other users: chmod 600 it", users_file)
    if os.environ.get(USERS_VARIABLE, "").strip():
        sources.append((USERS_VARIABLE, os.environ[USERS_VARIABLE]))
    accounts: dict[str, Account] = {}
    try:
        for source, text in sources:
            found = parse_accounts(text, source)
            for name in found.keys() & accounts.keys():
                raise AccountError(f"{source}: user {name!r} is named twice")
            accounts.update(found)
    except AccountError as error:
        fail(USAGE, str(error))
    if sources and not accounts:
        fail(USAGE, f"{' and '.join(source for source, _ in sources)} name no user")
    return accounts


def _secret(secret_file: Path | None) -> bytes | None:
    """The secret of --secret-file or TASKHUB_DASHBOARD_SECRET (one of them);
    None: the dashboard makes one of its own. Exit 2 naming the source,
    never quoting what it holds."""
    from_variable = os.environ.get(SECRET_VARIABLE) or None  # set but empty: not given
    if secret_file is not None and from_variable is not None:
        fail(USAGE, f"give the secret once: --secret-file or {SECRET_VARIABLE}, not both")
    try:
        if from_variable is not None:
            return configured_secret(from_variable, SECRET_VARIABLE)
        if secret_file is None:
            return None
        try:
            text = secret_file.read_text(encoding="utf-8")
        except OSError as error:
            fail(USAGE, f"--secret-file {str(secret_file)!r}: {error.strerror}")
        except UnicodeDecodeError:
            fail(USAGE, f"--secret-file {str(secret_file)!r}: not UTF-8 text")
        if secret_file.stat().st_mode & 0o077:
            log.warning("%s can be read by other users: chmod 600 it", secret_file)
        return configured_secret(text, f"--secret-file {str(secret_file)!r}")
    except ValueError as error:
        fail(USAGE, str(error))


def _sign_in(policy: AccessPolicy) -> str:
    ways = []
    if policy.accounts:
        ways.append(f"basic auth, {len(policy.accounts)} users")
    if policy.proxy_header:
        ways.append(f"the proxy's {policy.proxy_header} header")
    return "sign-in: " + (" or ".join(ways) if ways else "none")
