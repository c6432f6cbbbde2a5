"""Researchers' budgets move to the costs of the monitoring app from the inventory app (label fleet)."""

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MOVED = ['userbudget']


def move_content_types(apps, schema_editor):
    """Permissions and admin history follow the models: their content types change app, keeping their ids."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="fleet", model__in=MOVED).update(app_label='monitoring')


class Migration(migrations.Migration):

    dependencies = [
        ('monitoring', '0018_group_across_evaluations'),
        ('fleet', '0010_gpu_table_fillfactor'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The tables stay where they are (db_table): only Django's idea of which app owns them moves.
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.CreateModel(
                name='UserBudget',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('monthly_budget', models.DecimalField(decimal_places=2, help_text='USD per calendar month.', max_digits=12, validators=[django.core.validators.MinValueValidator(0, 'A budget cannot be below zero.')])),
                    ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='budget', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'fleet_userbudget',
                    'constraints': [models.CheckConstraint(condition=models.Q(('monthly_budget__gte', 0)), name='userbudget_not_negative')],
                },
            ),
            ],
        ),
        migrations.RunPython(move_content_types, migrations.RunPython.noop),
    ]
