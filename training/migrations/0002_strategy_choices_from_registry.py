# The choices are read from the strategy registry (training.strategies), so a new strategy needs no migration.

import training.strategies
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('training', '0001_initial'),
    ]

    operations = [
        migrations.AlterField(
            model_name='run',
            name='strategy',
            field=models.CharField(choices=training.strategies.choices, max_length=16),
        ),
    ]
