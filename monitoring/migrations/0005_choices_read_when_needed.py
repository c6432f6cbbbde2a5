# Alert kinds and transports are read when needed, so a new kind or a new transport needs no migration of its own.

import monitoring.alerts.choices
import monitoring.notify.transports
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('monitoring', '0004_processsample_ts_brin'),
    ]

    operations = [
        migrations.AlterField(
            model_name='alert',
            name='kind',
            field=models.CharField(choices=monitoring.alerts.choices.alert_kinds, max_length=32),
        ),
        migrations.AlterField(
            model_name='notification',
            name='transport',
            field=models.CharField(choices=monitoring.notify.transports.choices, max_length=16),
        ),
    ]
