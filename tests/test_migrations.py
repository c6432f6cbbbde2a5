"""The models and the migrations agree, including choices read from registries (strategies, transports)."""

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_lacks_a_migration():
    try:
        call_command("makemigrations", "--check", "--dry-run", verbosity=0)
    except SystemExit as exit:
        pytest.fail(f"makemigrations --check found changes without a migration (exit {exit.code})")
