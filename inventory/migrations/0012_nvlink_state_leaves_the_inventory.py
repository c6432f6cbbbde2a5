"""The per-link NVLink row becomes telemetry's (monitoring 0020 takes its table); nothing changes in the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("fleet", "0011_models_move_to_their_apps")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name='NvLinkState',
                ),
            ],
        ),
    ]
