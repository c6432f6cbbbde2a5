"""Named, hashed API tokens; the plain keys of DRF's token table become hashed tokens that keep working
until their owners rotate them, and the plain table is dropped."""

import hashlib

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


LEGACY_TABLE = "authtoken_token"
LEGACY_NAME = "Key from before named tokens (rotate it)"


def hash_legacy_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if LEGACY_TABLE not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("fleet", "ApiToken")
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "key", "created", "user_id" FROM "{LEGACY_TABLE}"')
        rows = cursor.fetchall()
    ApiToken.objects.bulk_create(
        ApiToken(
            user_id=user_id,
            name=LEGACY_NAME,
            key_hash=hashlib.sha256(key.encode()).hexdigest(),
            prefix=key[:4],
            created=created,
        )
        for key, created, user_id in rows
    )
    with connection.cursor() as cursor:
        cursor.execute(f'DROP TABLE "{LEGACY_TABLE}"')
        cursor.execute("DELETE FROM django_migrations WHERE app = 'authtoken'")


class Migration(migrations.Migration):

    dependencies = [
        ('fleet', '0005_booking_function'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
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
                'ordering': ['-created'],
                'indexes': [models.Index(fields=['user', '-created'], name='apitoken_user_created')],
            },
        ),
        migrations.RunPython(hash_legacy_tokens, migrations.RunPython.noop),
    ]
