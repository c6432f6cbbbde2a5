"""A node worker reports the environments runs may use on its node (venvs, conda envs, images)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('training', '0009_run_commands_and_environments'),
    ]

    operations = [
        migrations.AddField(
            model_name='workerpresence',
            name='environments',
            field=models.JSONField(blank=True, default=dict, help_text='What runs may use there, as it last reported: {"venv": ["/srv/envs/torch"], "image": [...]}.'),
        ),
    ]
