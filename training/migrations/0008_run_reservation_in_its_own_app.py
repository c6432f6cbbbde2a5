"""A run's booking is now the reservations app's model; same table, same constraint."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('reservations', '0001_initial'),
        ('training', '0007_run_checkpoints_and_resume'),
    ]

    operations = [
        # The tables stay where they are (db_table): only Django's idea of which app owns them moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.AlterField(
                model_name='run',
                name='reservation',
                field=models.ForeignKey(blank=True, help_text='The booking a scheduled run starts on.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='runs', to='reservations.reservation'),
            ),
            ],
        ),
    ]
