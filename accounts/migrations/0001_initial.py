"""API tokens move to the accounts app from the inventory app (label fleet), where fleet/migrations/0006 made them."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


MOVED = ['apitoken']


def move_content_types(apps, schema_editor):
    """Permissions and admin history follow the models: their content types change app, keeping their ids."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="fleet", model__in=MOVED).update(app_label='accounts')


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('fleet', '0010_gpu_table_fillfactor'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The tables stay where they are (db_table): only Django's idea of which app owns them moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.CreateModel(
                name='ApiToken',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100)),
                    ('key_hash', models.CharField(max_length=64, unique=True)),
                    ('prefix', models.CharField(help_text="The key's first characters, to tell keys apart.", max_length=12)),
                    ('created', models.DateTimeField(default=django.utils.timezone.now)),
                    ('expires_at', models.DateTimeField(blank=True, help_text='Empty: never expires.', null=True)),
                    ('last_used_at', models.DateTimeField(blank=True, null=True)),
                    ('revoked_at', models.DateTimeField(blank=True, null=True)),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'fleet_apitoken',
                    'ordering': ['-created'],
                    'indexes': [models.Index(fields=['user', '-created'], name='apitoken_user_created')],
                },
            ),
            ],
        ),
        migrations.RunPython(move_content_types, migrations.RunPython.noop),
    ]
