"""Bookings move to the reservations app from the inventory app (label fleet), where its migrations 0003 and 0005 made them."""

import django.contrib.postgres.constraints
import django.contrib.postgres.fields.ranges
import django.db.models.deletion
import reservations.models
import uuid
from django.conf import settings
from django.db import migrations, models


MOVED = ['reservation', 'reservationevent', 'quotapolicy', 'deadlinewindow', 'calendarfeed']


def move_content_types(apps, schema_editor):
    """Permissions and admin history follow the models: their content types change app, keeping their ids."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="fleet", model__in=MOVED).update(app_label='reservations')


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
                name='CalendarFeed',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('token_hash', models.CharField(max_length=64, unique=True)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='calendar_feed', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'fleet_calendarfeed',
                },
            ),
            migrations.CreateModel(
                name='DeadlineWindow',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(help_text='e.g. NeurIPS 2026', max_length=100)),
                    ('deadline', models.DateTimeField()),
                    ('window_days', models.PositiveSmallIntegerField(default=14)),
                    ('user_gpu_hours_per_week', models.PositiveIntegerField(blank=True, help_text='Empty: the usual limit.', null=True)),
                    ('project_gpu_hours_per_week', models.PositiveIntegerField(blank=True, help_text='Empty: the usual limit.', null=True)),
                    ('longest_booking_hours', models.PositiveIntegerField(blank=True, help_text='Empty: the usual limit.', null=True)),
                ],
                options={
                    'db_table': 'fleet_deadlinewindow',
                    'ordering': ['deadline'],
                    'constraints': [models.CheckConstraint(condition=models.Q(('window_days__gte', 1)), name='deadlinewindow_at_least_a_day'), models.UniqueConstraint(fields=('name', 'deadline'), name='deadlinewindow_unique_name_and_deadline')],
                },
            ),
            migrations.CreateModel(
                name='QuotaPolicy',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('user_gpu_hours_per_week', models.PositiveIntegerField(blank=True, help_text='GPU-hours one researcher may book per calendar week.', null=True)),
                    ('project_gpu_hours_per_week', models.PositiveIntegerField(blank=True, help_text='GPU-hours all members together may book for one project per week.', null=True)),
                    ('longest_booking_hours', models.PositiveIntegerField(blank=True, default=168, help_text='Longest window of a single booking.', null=True)),
                    ('furthest_ahead_days', models.PositiveIntegerField(default=90, help_text='How far ahead a booking may start.')),
                ],
                options={
                    'verbose_name': 'quota policy',
                    'verbose_name_plural': 'quota policy',
                    'db_table': 'fleet_quotapolicy',
                    'constraints': [models.CheckConstraint(condition=models.Q(('id', 1)), name='quotapolicy_single_row')],
                },
            ),
            migrations.CreateModel(
                name='Reservation',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('booking', models.UUIDField(default=uuid.uuid4, editable=False, help_text='Rows booked together share it.')),
                    ('start', models.DateTimeField()),
                    ('end', models.DateTimeField()),
                    ('purpose', models.CharField(blank=True, max_length=200)),
                    ('deadline_name', models.CharField(blank=True, help_text='e.g. NeurIPS 2026', max_length=100)),
                    ('deadline_date', models.DateField(blank=True, null=True)),
                    ('status', models.CharField(choices=[('active', 'Active'), ('cancelled', 'Cancelled'), ('released', 'Released (no-show)'), ('preempted', 'Preempted'), ('ended', 'Ended')], default='active', max_length=16)),
                    ('status_changed', models.DateTimeField(blank=True, null=True)),
                    ('first_used_at', models.DateTimeField(blank=True, help_text="First time a holder's process was seen.", null=True)),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('changed_by', models.ForeignKey(blank=True, help_text='Who last cancelled, preempted or moved it, when not the holder.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='reservations_changed', to=settings.AUTH_USER_MODEL)),
                    ('gpu', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='reservations', to='fleet.gpu')),
                    ('project', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='reservations', to='fleet.project')),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='reservations', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'fleet_reservation',
                    'ordering': ['start', 'gpu_id'],
                },
            ),
            migrations.CreateModel(
                name='ReservationEvent',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('kind', models.CharField(choices=[('preempted', 'Preempted by an admin'), ('released', 'Released: not used in time'), ('squatting', 'Someone else is using a booked GPU'), ('changed_by_admin', 'Changed by an admin')], max_length=20)),
                    ('os_user', models.CharField(blank=True, help_text="Squatting: the process's OS user.", max_length=64)),
                    ('pid', models.PositiveIntegerField(blank=True, null=True)),
                    ('detail', models.TextField()),
                    ('created', models.DateTimeField(auto_now_add=True)),
                    ('last_seen', models.DateTimeField(blank=True, help_text='Squatting: last time the process was seen.', null=True)),
                    ('emailed_at', models.DateTimeField(blank=True, null=True)),
                    ('email_error', models.TextField(blank=True)),
                    ('processed', models.DateTimeField(blank=True, help_text='When the alert engine took it up.', null=True)),
                    ('actor', models.ForeignKey(blank=True, help_text='The admin who preempted or changed it, or the researcher found squatting.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='reservation_actions', to=settings.AUTH_USER_MODEL)),
                    ('reservation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='reservations.reservation')),
                    ('user', models.ForeignKey(help_text='Who is affected: the holder of the reservation.', on_delete=django.db.models.deletion.CASCADE, related_name='reservation_events', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'fleet_reservationevent',
                    'ordering': ['-created'],
                },
            ),
            migrations.AddIndex(
                model_name='reservation',
                index=models.Index(fields=['booking'], name='reservation_booking'),
            ),
            migrations.AddIndex(
                model_name='reservation',
                index=models.Index(fields=['gpu', 'end'], name='reservation_gpu_end'),
            ),
            migrations.AddIndex(
                model_name='reservation',
                index=models.Index(fields=['user', 'start'], name='reservation_user_start'),
            ),
            migrations.AddConstraint(
                model_name='reservation',
                constraint=models.CheckConstraint(condition=models.Q(('start__lt', models.F('end'))), name='reservation_starts_before_it_ends'),
            ),
            migrations.AddConstraint(
                model_name='reservation',
                constraint=django.contrib.postgres.constraints.ExclusionConstraint(condition=models.Q(('status', 'active')), expressions=[(reservations.models.Int8Range(models.F('gpu'), models.F('gpu'), django.contrib.postgres.fields.ranges.RangeBoundary(inclusive_lower=True, inclusive_upper=True)), '&&'), (reservations.models.TsTzRange('start', 'end', django.contrib.postgres.fields.ranges.RangeBoundary()), '&&')], name='reservation_no_overlap', violation_error_message='This GPU is already booked for part of that time.'),
            ),
            migrations.AddIndex(
                model_name='reservationevent',
                index=models.Index(fields=['user', '-created'], name='reservationevent_user_created'),
            ),
            migrations.AddConstraint(
                model_name='reservationevent',
                constraint=models.UniqueConstraint(condition=models.Q(('kind', 'squatting')), fields=('reservation', 'os_user'), name='reservationevent_one_squatting_per_os_user'),
            ),
            ],
        ),
        migrations.RunPython(move_content_types, migrations.RunPython.noop),
    ]
