"""Runs become commands: an argument list or a shell line, a working directory, variables, a setup step and
the environment they run in (kinds read from training.environments, so a new kind needs no migration)."""

import training.environments
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('training', '0008_run_reservation_in_its_own_app'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='command',
            field=models.JSONField(blank=True, default=list, help_text='The argument list, run without a shell.'),
        ),
        migrations.AddField(
            model_name='run',
            name='env_kind',
            field=models.CharField(choices=training.environments.choices, default='fleet', max_length=16),
        ),
        migrations.AddField(
            model_name='run',
            name='env_ref',
            field=models.CharField(blank=True, help_text="A venv's or conda env's path on the node, or a container image.", max_length=1000),
        ),
        migrations.AddField(
            model_name='run',
            name='setup',
            field=models.TextField(blank=True, help_text='Commands run first, in the same environment and directory.'),
        ),
        migrations.AddField(
            model_name='run',
            name='shell_line',
            field=models.TextField(blank=True, help_text='A shell line the researcher chose: run as bash -lc LINE.'),
        ),
        migrations.AddField(
            model_name='run',
            name='variables',
            field=models.JSONField(blank=True, default=dict, help_text='Environment variables set at launch; secret-looking values are never shown, and wiped at the end.'),
        ),
        migrations.AddField(
            model_name='run',
            name='workdir',
            field=models.CharField(blank=True, help_text="Where it runs; empty: the run's directory.", max_length=1000),
        ),
    ]
