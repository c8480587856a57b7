"""Which background roles `serve` runs in-process (NEWSROOM_SERVE_ROLES).

Pure: settings.py calls it before Django is set up.
"""

from __future__ import annotations

from newsroom.env import SettingError, env_list

SERVE_ROLES = ("runs", "fold", "reaper")


def serve_roles(
    environ: dict[str, str] | None = None,
    *,
    run_worker: str = "inprocess",
    fold_in_serve: bool = True,
) -> list[str]:
    """The roles from NEWSROOM_SERVE_ROLES ("none" for no role). Unset, every role
    but those the older switches (NEWSROOM_RUN_WORKER=external,
    NEWSROOM_FOLD_IN_SERVE=0) moved out."""
    default = [
        role
        for role, on in (
            ("runs", run_worker == "inprocess"),
            ("fold", fold_in_serve),
            ("reaper", True),
        )
        if on
    ]
    roles = env_list("NEWSROOM_SERVE_ROLES", default, environ)
    if [r.lower() for r in roles] == ["none"]:
        return []
    roles = [r.lower() for r in roles]
    unknown = [r for r in roles if r not in SERVE_ROLES]
    if unknown:
        raise SettingError(
            f"NEWSROOM_SERVE_ROLES names {', '.join(unknown)}: use any of "
            f"{', '.join(SERVE_ROLES)} (comma-separated) or none"
        )
    return list(dict.fromkeys(roles))
