"""NEWSROOM_SERVE_ROLES: one switch for what `serve` runs in-process."""

from __future__ import annotations

import pytest

from newsroom.env import SettingError
from newsroom.ops.roles import serve_roles


@pytest.mark.parametrize(
    ("environ", "kwargs", "expected"),
    [
        ({}, {}, ["runs", "fold", "reaper"]),
        ({"NEWSROOM_SERVE_ROLES": "none"}, {}, []),
        ({"NEWSROOM_SERVE_ROLES": "None"}, {}, []),
        ({"NEWSROOM_SERVE_ROLES": "reaper"}, {}, ["reaper"]),
        ({"NEWSROOM_SERVE_ROLES": "fold, runs,fold"}, {}, ["fold", "runs"]),
        # The older switches still move their role out when the list is unset...
        ({}, {"run_worker": "external"}, ["fold", "reaper"]),
        ({}, {"fold_in_serve": False}, ["runs", "reaper"]),
        # ...and the list wins when both are set.
        ({"NEWSROOM_SERVE_ROLES": "runs"}, {"run_worker": "external"}, ["runs"]),
    ],
)
def test_roles_from_the_environment(environ, kwargs, expected):
    assert serve_roles(environ, **kwargs) == expected


@pytest.mark.parametrize("value", ["runs,web", "fold,,reaper", "", "all"])
def test_a_bad_list_fails_loudly_naming_the_setting(value):
    with pytest.raises(SettingError, match="NEWSROOM_SERVE_ROLES"):
        serve_roles({"NEWSROOM_SERVE_ROLES": value})
