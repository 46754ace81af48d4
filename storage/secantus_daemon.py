"""SecantusDB's daemon, with its user created before it listens: a fresh var/ starts SecantusDB once, with
--auth from its first connection (it used to start twice: without auth to create the user, then with it).

    python -c "import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='__main__')" \
        .../storage/secantus_daemon.py [--user NAME --credentials FILE] SECANTUS-ARGS...

Run by path (storage.servers starts it), never imported by the project: it needs only SecantusDB and the
standard library, so the server process does not import this project's packages. With --user the user
(role root on admin) gets the "mongo" password from the 0600 credentials file (never on the command line),
replacing a user of that name (credentials restored from a backup: a new password), and is checkpointed to
disk before the server accepts its first connection: a server that answers with the password has its
user on disk, and a SIGKILL loses nothing of it.
"""
from __future__ import annotations

import json
import sys
from typing import Any

ROLES = [{"role": "root", "db": "admin"}]


def provision(storage: Any, user: str, password: str) -> None:
    """Store `user` in admin with SCRAM-SHA-256 credentials (as SecantusDB's createUser does) and checkpoint."""
    from secantus.auth import SCRAM_SHA_256, derive_credentials

    credentials = derive_credentials(password, mechanism=SCRAM_SHA_256, username=user).to_doc()
    record = {"_id": f"admin.{user}", "user": user, "db": "admin", "credentials": credentials,
              "roles": ROLES, "mechanisms": [SCRAM_SHA_256]}
    storage.add_user("admin", user, record, replace=True)
    storage.checkpoint()


def split_args(args: list[str]) -> tuple[str | None, str | None, list[str]]:
    """(--user, --credentials, the rest for SecantusDB's own command line)."""
    rest, found = [], {"--user": None, "--credentials": None}
    it = iter(args)
    for arg in it:
        if arg in found:
            found[arg] = next(it, None)
        else:
            rest.append(arg)
    return found["--user"], found["--credentials"], rest


def main(args: list[str]) -> int:
    """SecantusDB's command line, its server class provisioning `--user` first when asked to."""
    from secantus import cli

    user, credentials_file, rest = split_args(args)
    if user and credentials_file:
        with open(credentials_file, encoding="utf-8") as fh:
            password = json.load(fh)["mongo"]

        class ProvisionedServer(cli.SecantusDBServer):
            """The daemon's server, its user stored before the socket opens."""

            def start(self) -> None:
                provision(self.storage, user, password)
                super().start()

        cli.SecantusDBServer = ProvisionedServer
    return cli.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
